-- Argo CD health check for nvidia.com DynamoGraphDeployment (v1alpha1 and v1beta1), shipped by
-- dgdgen. Install it as argocd-cm key
--   resource.customizations.health.nvidia.com_DynamoGraphDeployment
-- (`dgdgen argo` writes the patch). Argo CD ships no check for DGDs: without one a DGD counts as
-- Healthy the moment it is applied, so sync waves and PostSync hooks would move traffic onto
-- workers that are still loading (docs/gitops.md, section 1).
--
-- Derived from the DGD CRD status schema (schemas/crds/dynamo/): status.state
-- (initializing|pending|successful|failed), status.conditions[type=Ready],
-- status.observedGeneration, status.rollingUpdate.phase (Pending|InProgress|Completed|Failed|""),
-- status.restart.inProgress, and per-component replica counts in status.components (v1beta1) or
-- status.services (v1alpha1): updatedReplicas, readyReplicas, availableReplicas, compared with the
-- desired replicas of every component in the spec.
--
-- The Ready condition's reasons (ai-dynamo/dynamo deploy/operator/api/v1beta1/
-- dynamographdeployment_types.go, DGDReadyReason*): `updating` (scheduled, still rolling out
-- updated replicas) is Progressing; `insufficient_capacity` (Grove reports too few scheduled
-- replicas, schedule-gated pods or a scheduling/capacity condition) is Progressing for
-- CAPACITY_WAIT seconds after the condition's lastTransitionTime, then Degraded with the reason:
-- new pods that cannot get their GPUs are told apart from a roll that is still moving.
--
-- A roll that does not finish is Degraded after ROLL_WAIT seconds. The DGD API defines
-- status.rollingUpdate.phase `Failed`, but the operator never sets it (Dynamo's rolling-update
-- task guide, docs/fern/pages/kubernetes/operations/rolling-updates.md: "defined, never set"),
-- and Grove / LWS-backed DGDs report no rollingUpdate at all: a roll whose new pods never become
-- ready stays Pending / InProgress, or keeps the Ready reason `updating`, for ever. So the time
-- since it started (rollingUpdate.startTime, else the Ready condition's lastTransitionTime) is
-- what ends it; a `Failed` phase, should an operator set it, is Degraded at once.
--
-- Everything else uses only Lua 5.1 base functions (pairs, ipairs, type, tostring). Measuring the
-- capacity wait needs a clock and a date parser (os.time, os.date, string.match): dgdgen's
-- argocd-cm patch sets resource.customizations.useOpenLibs.nvidia.com_DynamoGraphDeployment.
-- Without them the script still runs, and says it cannot time the wait.

local hs = {}

-- seconds a DGD may wait for capacity (GPUs, nodes) before it counts as Degraded
local CAPACITY_WAIT = 600
-- seconds a roll may run before it counts as Degraded (the operator never reports it failed)
local ROLL_WAIT = 1800

local function result(status, message)
  hs.status = status
  hs.message = message
  return hs
end

local function ready_condition(status)
  if type(status.conditions) ~= "table" then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == "Ready" then
      return c
    end
  end
  return nil
end

local function describe(cond, fallback)
  if cond ~= nil then
    if cond.message ~= nil and cond.message ~= "" then
      return cond.message
    end
    if cond.reason ~= nil and cond.reason ~= "" then
      return cond.reason
    end
  end
  return fallback
end

-- seconds since an RFC 3339 UTC time (`2026-08-20T10:00:00Z`), or nil without a clock or a
-- parsable time
local function age(stamp)
  if type(os) ~= "table" or type(os.time) ~= "function" or type(os.date) ~= "function" or
      type(string) ~= "table" or type(string.match) ~= "function" or type(stamp) ~= "string" then
    return nil
  end
  local y, mo, d, h, mi, se = string.match(stamp, "^(%d%d%d%d)-(%d%d)-(%d%d)T(%d%d):(%d%d):(%d%d)")
  if y == nil then
    return nil
  end
  local fields = {year = tonumber(y), month = tonumber(mo), day = tonumber(d),
                  hour = tonumber(h), min = tonumber(mi), sec = tonumber(se), isdst = false}
  local now = os.time()
  -- os.time reads the table as local time: shift by the zone's offset to read it as UTC
  local utc_now = os.date("!*t", now)
  utc_now.isdst = false
  local offset = now - os.time(utc_now)
  return now - (os.time(fields) + offset)
end

-- component names in a stable order (pairs() has none), without the table library
local function sorted_keys(t)
  local keys = {}
  local n = 0
  for k, _ in pairs(t) do
    n = n + 1
    local i = n
    while i > 1 and keys[i - 1] > k do
      keys[i] = keys[i - 1]
      i = i - 1
    end
    keys[i] = k
  end
  return keys
end

local status = obj.status
if status == nil then
  return result("Progressing", "Waiting for the Dynamo operator to report status")
end

local generation = nil
if obj.metadata ~= nil then
  generation = obj.metadata.generation
end
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration < generation then
  return result("Progressing", "Waiting for the operator to observe generation " ..
    tostring(generation) .. " (observed " .. tostring(status.observedGeneration) .. ")")
end

local ready = ready_condition(status)

if status.state == "failed" then
  return result("Degraded", describe(ready, "DynamoGraphDeployment failed"))
end

if ready ~= nil and ready.status ~= "True" and ready.reason == "insufficient_capacity" then
  local what = describe(ready, "insufficient_capacity")
  if what ~= "insufficient_capacity" then
    what = "insufficient_capacity: " .. what
  end
  local waited = age(ready.lastTransitionTime)
  if waited == nil then
    return result("Progressing", what .. " (the wait cannot be timed: the health check needs " ..
      "resource.customizations.useOpenLibs.nvidia.com_DynamoGraphDeployment)")
  end
  if waited >= CAPACITY_WAIT then
    return result("Degraded", what .. " (for " .. tostring(waited) .. " s, more than " ..
      tostring(CAPACITY_WAIT) .. " s)")
  end
  return result("Progressing", what .. " (waiting for capacity, " .. tostring(waited) .. " of " ..
    tostring(CAPACITY_WAIT) .. " s)")
end
-- a roll still running: Progressing until ROLL_WAIT has passed since `since`, then Degraded
local function rolling_for(message, since)
  local waited = age(since)
  if waited ~= nil and waited >= ROLL_WAIT then
    return result("Degraded", message .. " for " .. tostring(waited) .. " s, more than " ..
      tostring(ROLL_WAIT) .. " s (the operator never reports a roll failed: check the new pods)")
  end
  return result("Progressing", message)
end

local rolling = status.rollingUpdate
if rolling ~= nil and rolling.phase == "Failed" then
  return result("Degraded", "Rolling update failed: " .. describe(ready, "see the operator's events"))
end
if ready ~= nil and ready.status ~= "True" and ready.reason == "updating" then
  local since = ready.lastTransitionTime
  if rolling ~= nil and rolling.startTime ~= nil then
    since = rolling.startTime
  end
  return rolling_for("Updating: " .. describe(ready, "rolling out updated replicas"), since)
end
if rolling ~= nil and (rolling.phase == "Pending" or rolling.phase == "InProgress") then
  local since = rolling.startTime
  if since == nil and ready ~= nil then
    since = ready.lastTransitionTime
  end
  return rolling_for("Rolling update " .. rolling.phase, since)
end

if status.restart ~= nil and type(status.restart.inProgress) == "table" and
    #status.restart.inProgress > 0 then
  return result("Progressing", "Restart in progress: " .. tostring(status.restart.inProgress[1]))
end

-- Desired replicas come from the spec (v1alpha1 spec.services.<name>.replicas, v1beta1
-- spec.components[].replicas), never from the status: the status' own `replicas` is what the
-- operator has created so far, so a component with 2 wanted and 0 created would look complete.
-- A component the spec names but the status does not list yet is not ready. An unset `replicas`
-- is 1 (the operator's default for a component). Ready must EQUAL desired: more ready than
-- desired is a shrink still in progress (ai-dynamo/dynamo#3567: "successful" can come too early).
local desired = {}
local spec = obj.spec
if type(spec) == "table" then
  if type(spec.services) == "table" then
    for name, svc in pairs(spec.services) do
      desired[name] = svc.replicas or 1
    end
  end
  if type(spec.components) == "table" then
    for _, comp in ipairs(spec.components) do
      if comp.name ~= nil then
        desired[comp.name] = comp.replicas or 1
      end
    end
  end
end

local components = status.components
if components == nil then
  components = status.services
end
-- Without any per-component counts only "successful" needs them to be refuted; the other states
-- are Progressing below with the operator's own message.
local counted = type(components) == "table" or status.state == "successful"
if type(components) ~= "table" then
  components = {}
end
for _, name in ipairs(sorted_keys(desired)) do
  local want = desired[name]
  local c = components[name]
  if c == nil then
    if want > 0 and counted then
      return result("Progressing", name .. ": no replica status yet (0/" .. tostring(want) ..
        " replicas ready)")
    end
  else
    local updated = c.updatedReplicas
    if updated ~= nil and updated < want then
      return result("Progressing", name .. ": " .. tostring(updated) .. "/" ..
        tostring(want) .. " replicas updated")
    end
    local nready = c.readyReplicas or 0
    if nready ~= want then
      return result("Progressing", name .. ": " .. tostring(nready) .. "/" ..
        tostring(want) .. " replicas ready")
    end
    if c.availableReplicas ~= nil and c.availableReplicas < want then
      return result("Progressing", name .. ": " .. tostring(c.availableReplicas) .. "/" ..
        tostring(want) .. " replicas available")
    end
  end
end

if status.state == "successful" then
  if ready == nil or ready.status == "True" then
    return result("Healthy", describe(ready, "All components are ready"))
  end
  return result("Progressing", describe(ready, "Waiting for condition Ready"))
end

if status.state == "pending" then
  return result("Progressing", describe(ready, "Pending"))
end
return result("Progressing", describe(ready, "Initializing"))
