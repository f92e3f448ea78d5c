//! The Lua scripts of the Redis store, each applied atomically by Redis:
//! the room write (fenced and conditional), claims, releases, parking, and
//! the two small compare-and-change scripts sent with `EVAL`.

/// Applies one room write, or one move append, atomically, if it follows
/// from what is stored (the rule is on [`RoomWrite::expected_version`]).
/// A move at an id the stream already holds must be the same move (an
/// earlier write of ours that landed); any other move must come after the
/// stream's last. Every check runs before anything is written, so a
/// refused write changes nothing. First of all the writer must own the
/// room at the stored epoch (a room's very first write, epoch 1, claims
/// it). When a write begins a new game, the earlier games' moves leave the
/// stream (their PDN is stored by then), so the log holds one game and a
/// resume replays one; a re-sent move of such a game is taken as stored.
///
/// An append (an empty record) passes the same checks, adds its moves with
/// their effects and the new version, and leaves the record, the games and
/// the keys' expiry alone. Stored at its own version already, it is the
/// same append landed before if the stream's last entry is its last move
/// (same id and path) at that version. Returns `ok`, `fenced:` or `conflict:` and why.
///
/// KEYS: room, moves, games, fence.
/// ARGV: record ('' for an append), expected, version, owner, epoch, n,
/// n × (id, path, text, seat, seq, version, at, deadline, to move,
/// submitted; the last five '' for a move without effects), g, g × (game
/// number, PDN), ttl (0 keeps the keys).
///
/// [`RoomWrite::expected_version`]: super::RoomWrite::expected_version
pub(super) const WRITE_SCRIPT: &str = r"
local fence = redis.call('HMGET', KEYS[4], 'owner', 'epoch', 'version')
local owner = fence[1] or ''
local epoch = tonumber(fence[2]) or 0
local claims = epoch == 0 and tonumber(ARGV[5]) == 1 and redis.call('EXISTS', KEYS[1]) == 0
if not claims and (owner ~= ARGV[4] or epoch ~= tonumber(ARGV[5])) then
  return 'fenced:owned by ' .. owner .. ' at epoch ' .. epoch
end
local append = ARGV[1] == ''
if append and redis.call('EXISTS', KEYS[1]) == 0 then
  return 'conflict:no record to append to'
end
local stored = fence[3]
if stored then
  stored = tonumber(stored)
else
  local old = redis.call('GET', KEYS[1])
  if old then
    local ok, decoded = pcall(cjson.decode, old)
    if not ok or type(decoded) ~= 'table' then return 'conflict:unreadable stored record' end
    stored = tonumber(decoded.version) or 0
  else
    stored = 0
  end
end
local n = tonumber(ARGV[6])
local expected, version = tonumber(ARGV[2]), tonumber(ARGV[3])
if stored == version then
  if append then
    local tail = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
    local at = 7 + (n - 1) * 10
    if n > 0 and #tail > 0 and tail[1][1] == ARGV[at] then
      local f = tail[1][2]
      local same = {}
      for k = 1, #f, 2 do same[f[k]] = f[k + 1] end
      if same['v'] == ARGV[3] and same['path'] == ARGV[at + 1] then return 'ok' end
    end
  elseif redis.call('GET', KEYS[1]) == ARGV[1] then
    return 'ok'
  end
  return 'conflict:version ' .. stored .. ' holds another change'
end
if stored < expected or stored > version then
  return 'conflict:stored version ' .. stored .. ', this write follows ' .. expected
end
local function id(s)
  local g, p = string.match(s, '^(%d+)-(%d+)$')
  return tonumber(g), tonumber(p)
end
local lg, lp = 0, 0
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 then lg, lp = id(last[1][1]) end
local stored_game = lg
-- The log's first game, read only when a move is not past the log's end.
local first_game
local function log_first_game()
  if first_game == nil then
    first_game = stored_game
    local head = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
    if #head > 0 then first_game = id(head[1][1]) end
  end
  return first_game
end
local fresh = {}
local i = 7
for _ = 1, n do
  local g, p = id(ARGV[i])
  if g > lg or (g == lg and p > lp) then
    table.insert(fresh, i)
    lg, lp = g, p
  else
    local e = redis.call('XRANGE', KEYS[2], ARGV[i], ARGV[i])
    if #e == 0 then
      -- A move of a finished game the log no longer holds (archived when
      -- a later game began) was stored before: nothing to compare.
      if g >= log_first_game() then return 'conflict:no move at ' .. ARGV[i] end
    else
      local f = e[1][2]
      local same = {}
      for k = 1, #f, 2 do same[f[k]] = f[k + 1] end
      if same['path'] ~= ARGV[i + 1] or same['seat'] ~= ARGV[i + 3] then
        return 'conflict:another move is stored at ' .. ARGV[i]
      end
    end
  end
  i = i + 10
end
for _, j in ipairs(fresh) do
  if ARGV[j + 5] == '' then
    redis.call('XADD', KEYS[2], ARGV[j], 'path', ARGV[j + 1], 'text', ARGV[j + 2], 'seat', ARGV[j + 3], 'seq', ARGV[j + 4])
  else
    redis.call('XADD', KEYS[2], ARGV[j], 'path', ARGV[j + 1], 'text', ARGV[j + 2], 'seat', ARGV[j + 3], 'seq', ARGV[j + 4],
      'v', ARGV[j + 5], 'at', ARGV[j + 6], 'dl', ARGV[j + 7], 'tm', ARGV[j + 8], 'act', ARGV[j + 9])
  end
end
-- A new game began: the finished games' moves leave the log (their PDN is
-- in the games hash), so a lobby that keeps rematching replays one game.
if lg > stored_game and stored_game > 0 then
  redis.call('XTRIM', KEYS[2], 'MINID', lg .. '-0')
end
if append then
  redis.call('HSET', KEYS[4], 'version', ARGV[3])
  return 'ok'
end
local g = tonumber(ARGV[i])
i = i + 1
for _ = 1, g do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
  i = i + 2
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[4], 'version', ARGV[3], 'owner', ARGV[4], 'epoch', ARGV[5])
local ttl = tonumber(ARGV[i])
for k = 1, 4 do
  if ttl > 0 then
    redis.call('EXPIRE', KEYS[k], ttl)
  else
    redis.call('PERSIST', KEYS[k])
  end
end
return 'ok'
";

/// Claims a room if its fence is still the one the claimer saw, and only
/// if the room exists. Returns the new epoch, or 0.
///
/// KEYS: room, fence. ARGV: claimer, seen owner ('' for none), seen epoch.
pub(super) const CLAIM_SCRIPT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local owner = redis.call('HGET', KEYS[2], 'owner') or ''
local epoch = tonumber(redis.call('HGET', KEYS[2], 'epoch')) or 0
if owner ~= ARGV[2] or epoch ~= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[2], 'owner', ARGV[1], 'epoch', epoch + 1, 'handed', 0, 'parked', 0)
return epoch + 1
";

/// Gives a room up if the releaser still owns it at its epoch: to the
/// instance that asked (a new epoch, marked handed), or, with '' as the
/// receiver, to nobody (the epoch stays). Returns 1 if released.
///
/// KEYS: fence. ARGV: owner, epoch, receiver ('' for nobody).
pub(super) const RELEASE_SCRIPT: &str = r"
local owner = redis.call('HGET', KEYS[1], 'owner') or ''
local epoch = tonumber(redis.call('HGET', KEYS[1], 'epoch')) or 0
if owner ~= ARGV[1] or epoch ~= tonumber(ARGV[2]) then return 0 end
if ARGV[3] == '' then
  redis.call('HSET', KEYS[1], 'owner', '')
else
  redis.call('HSET', KEYS[1], 'owner', ARGV[3], 'epoch', epoch + 1, 'handed', 1)
end
return 1
";

/// Names the instance a room belongs on, if the caller owns it (and, with
/// ARGV[3] = '1', only if none is named yet). Returns the home named
/// afterwards ('' for none), or false if the caller is not the owner.
///
/// KEYS: fence. ARGV: owner, home, only if unset ('1' or '0').
pub(super) const SET_HOME_SCRIPT: &str = r"
if (redis.call('HGET', KEYS[1], 'owner') or '') ~= ARGV[1] then return false end
local home = redis.call('HGET', KEYS[1], 'home') or ''
if ARGV[3] == '1' and home ~= '' then return home end
redis.call('HSET', KEYS[1], 'home', ARGV[2])
return ARGV[2]
";

/// Unloads a room if the caller still owns it at its epoch: no owner (the
/// epoch stays), marked parked, and its wake time kept beside (so a lost
/// dormant entry can be listed again). Returns 1 if parked.
///
/// KEYS: fence. ARGV: owner, epoch, wake time (the `jg:dormant` score).
pub(super) const PARK_SCRIPT: &str = r"
local owner = redis.call('HGET', KEYS[1], 'owner') or ''
local epoch = tonumber(redis.call('HGET', KEYS[1], 'epoch')) or 0
if owner ~= ARGV[1] or epoch ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'owner', '', 'parked', 1, 'wake', ARGV[3])
return 1
";

/// Takes a dormant entry off the list if its wake time is still the one
/// read (a room listed again meanwhile keeps its new entry). Sent with
/// `EVAL`, like the note script.
///
/// KEYS: the dormant set. ARGV: code, wake time as read.
pub(super) const FORGET_DORMANT_SCRIPT: &str = r"
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
";

/// Gives an identity's solo note a TTL if it names the game that closed
/// (a note naming the next game is left alone). Sent with `EVAL`: it is
/// short, and a restarted Redis needs nothing loaded.
///
/// KEYS: note. ARGV: game id, ttl in seconds (0: delete the note now).
pub(super) const EXPIRE_NOTE_SCRIPT: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then return redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return redis.call('DEL', KEYS[1])
";
