// Preloaded (node --import) into a process bench/verify.ts measures: heap and RSS after a full GC, appended
// as JSON lines to $BENCH_MEMORY_FILE. With BENCH_MEMORY_AT=report, once, when the process first writes to
// stdout (`doi-proxy check` writes its report in one piece, when it holds every entry and verdict: its
// high-water mark); on SIGWINCH (a server at rest after a run: close-with-grace stops the server on SIGUSR2,
// and SIGWINCH is ignored by default, so nothing else hears it); and at exit, the peak RSS and the CPU time
// of the whole run.
import { appendFileSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

const file = process.env.BENCH_MEMORY_FILE
if (file !== undefined && file !== '') {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc')
  const sample = (at) => {
    for (let i = 0; i < 3; i++) gc()
    const m = process.memoryUsage()
    appendFileSync(
      file,
      JSON.stringify({ at, heapUsed: m.heapUsed, rss: m.rss, external: m.external, arrayBuffers: m.arrayBuffers }) + '\n'
    )
  }
  if (process.env.BENCH_MEMORY_AT === 'report') {
    const write = process.stdout.write.bind(process.stdout)
    let sampled = false
    process.stdout.write = (...args) => {
      if (!sampled) {
        sampled = true
        sample('report')
      }
      return write(...args)
    }
  }
  process.on('SIGWINCH', () => sample('signal'))
  process.on('exit', () => {
    const u = process.resourceUsage()
    appendFileSync(file, JSON.stringify({ at: 'exit', maxRss: u.maxRSS * 1024, cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000 }) + '\n')
  })
}
