-- The wrk script of the benchmark runner (bench/lib/wrk.ts). Arguments after `--`:
--   1 a file of request paths, one a line, sent in that order and cycled (the runner draws them,
--     seeded, so every server gets the same sequence);
--   2 the index of the first path to send (0-based);
--   3 stop after this many answers (0: run for wrk's -d duration);
--   4… request headers as "name: value".
-- With WRK_COUNT=1 in the environment, answers are counted by status and X-Cache (a Lua call per
-- answer, which costs wrk some speed): needed for a limit and for hit ratios. wrk decides whether to
-- call response() from the script's top level, before init(), hence an environment variable.
-- done() prints one line of JSON: the runner reads the requests, time, errors and latency quantiles.
local reqs, n, i = {}, 0, 0
local limit = 0
answers, hits, cacheAnswers, statuses = 0, 0, 0, {}

function init (args)
  for k = 4, #args do
    local name, value = string.match(args[k], '^([^:]+):%s*(.*)$')
    if name ~= nil then wrk.headers[name] = value end
  end
  for line in io.lines(args[1]) do
    n = n + 1
    reqs[n] = wrk.format('GET', line)
  end
  i = tonumber(args[2]) % n
  limit = tonumber(args[3])
end

function request ()
  i = i + 1
  if i > n then i = 1 end
  return reqs[i]
end

local function counted (status, headers, _body)
  answers = answers + 1
  statuses[status] = (statuses[status] or 0) + 1
  local x = headers['X-Cache'] or headers['x-cache']
  if x ~= nil then
    cacheAnswers = cacheAnswers + 1
    if string.upper(x) == 'HIT' then hits = hits + 1 end
  end
  if limit > 0 and answers == limit then
    -- The runner sends SIGINT on this line; wrk then stops and reports the time so far.
    io.write('LIMIT\n')
    io.flush()
    wrk.thread:stop()
  end
end

if os.getenv('WRK_COUNT') == '1' then response = counted end

local threads = {}

function setup (thread)
  table.insert(threads, thread)
end

-- Latency quantiles (µs, exact: wrk keeps a 1 µs histogram): every 0.1 % and every 0.01 % above 99 %,
-- so the runner can merge rounds (each quantile standing for its share of the answers).
function done (summary, latency, _requests)
  local q = {}
  for k = 1, 990 do q[#q + 1] = latency:percentile(k / 10) end
  for k = 9901, 10000 do q[#q + 1] = latency:percentile(k / 100) end
  local st, h, ca = {}, 0, 0
  for _, t in ipairs(threads) do
    h = h + (t:get('hits') or 0)
    ca = ca + (t:get('cacheAnswers') or 0)
    local s = t:get('statuses')
    if type(s) == 'table' then
      for code, count in pairs(s) do st[#st + 1] = string.format('"%d":%d', code, count) end
    end
  end
  local e = summary.errors
  io.write(string.format(
    '{"wrk":true,"requests":%d,"durationUs":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"statusErrors":%d,"timeouts":%d,"hits":%d,"cacheAnswers":%d,"statuses":{%s},"max":%d,"quantiles":[%s]}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout, h, ca,
    table.concat(st, ','), latency.max, table.concat(q, ',')))
end
