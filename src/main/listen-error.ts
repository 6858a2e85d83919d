import { createServer } from 'node:net'

/**
 * Why the server could not listen, as one line naming HOST and PORT and what to do (main.ts prints it and
 * exits 78, as for any other setting refused at start). Undefined for an error that is not about them.
 */
export function listenErrorMessage(err: unknown, host: string, port: number): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  const where = `HOST=${host} PORT=${port}`
  switch (code) {
    case 'EADDRINUSE':
      return `cannot listen on ${where}: another program uses this port already (EADDRINUSE); stop it or choose another PORT`
    case 'EACCES':
      return `cannot listen on ${where}: permission denied (EACCES); a PORT below 1024 needs root or CAP_NET_BIND_SERVICE: use 1024 or above behind a reverse proxy`
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: HOST is not an address of this machine (EADDRNOTAVAIL); use one of its addresses, 0.0.0.0 (all) or 127.0.0.1 (this machine only)`
    case 'ENOTFOUND':
    case 'EAI_NONAME':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return `cannot listen on ${where}: HOST is neither an IP address nor a name that resolves here (${code}); use an address such as 0.0.0.0 or 127.0.0.1`
    case 'EAFNOSUPPORT':
      return `cannot listen on ${where}: this machine has no network of that address family (EAFNOSUPPORT); use 0.0.0.0 instead of an IPv6 address, or the reverse`
    default:
      return typeof code === 'string' &&
        ((err as NodeJS.ErrnoException).syscall === 'listen' || (err as NodeJS.ErrnoException).syscall === 'getaddrinfo')
        ? `cannot listen on ${where}: ${(err as Error).message}`
        : undefined
  }
}

/**
 * Whether HOST and PORT can be listened on, tried once and let go: the primary of WORKERS asks before
 * it forks, so a port in use is one line from it rather than one from each worker and its own.
 * The message as listenErrorMessage words it, or undefined when the listen worked.
 */
export async function listenProblem(host: string, port: number): Promise<string | undefined> {
  const server = createServer()
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen({ host, port, exclusive: true }, resolve)
    })
  } catch (err) {
    return listenErrorMessage(err, host, port) ?? `cannot listen on HOST=${host} PORT=${port}: ${(err as Error).message}`
  }
  await new Promise((resolve) => server.close(resolve))
  return undefined
}
