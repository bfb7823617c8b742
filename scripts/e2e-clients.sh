#!/usr/bin/env bash
# End to end with the real coding tools: Claude Code, Codex and Cline (and, at the end,
# OpenCode and Aider: their own cases below), configured by `fcm install`, talk to
# `fcm serve`, which routes to the fake provider on loopback. Each
# tool must print the fake provider's answer for a plain reply, after a tool call round
# trip, when a tool's output is terminal noise (colours, a progress line redrawn with CRs,
# one line printed 40 times: the provider must get it compressed), when the first model's
# stream fails before any content (fcm fails over to the
# next model of a set and the tool never sees the failed attempt), when the first model's
# tool call cannot run (cut-off arguments: fcm fails over and the round trip completes),
# and when the model thinks in `<think>` tags (the answer arrives without them, the
# reasoning where the tool shows reasoning), when the provider echoes the key it was sent
# (masked, as providers do: no tool shows any of it), when the first model's known budget
# is spent (fcm passes over it before dispatch: it is never sent a request, the tool is
# served by the next), when the model of a session's first turn slows down before its
# second (Claude Code and Codex: both turns are served by that model), with a race set (a slow and a fast model: the tool gets the fast
# one's answer and the slow one is cancelled), with a fusion set (the tools offer tools, so
# the first panel model answers; the OpenAI and Anthropic Python SDKs, which offer none,
# get the judge's merge, streamed), when a model needs its thought signatures back on every
# tool turn (Gemini 3), when a stream breaks after content (the next model finishes the
# answer; pinned, the OpenAI SDK raises and Codex says it broke off), when Codex patches a
# file under a model name it does not know, or one it knows as GPT (a freeform apply_patch;
# code mode's one JavaScript tool), and with an access token set (each tool sends the
# token `fcm install` wrote; a request without it is refused). The npm and PyPI packages
# are pinned and cached between runs; nothing leaves the machine. FCM_E2E_SHOW=PREFIX
# keeps each tool's output in PREFIX.<case>.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${FCM_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fcm-e2e}
PACKAGES=("@anthropic-ai/claude-code@2.1.197" "@openai/codex@0.171.0" "cline@3.0.65" "opencode-ai@1.18.33")
# Crush is not driven here: its npm package (@charmland/crush) downloads its binary from
# GitHub when it installs, and CI reaches only the package registries. What `fcm install
# crush` writes is checked against Crush's published schema and command reference in
# tests/install.rs instead.
RUN_LIMIT=${FCM_E2E_TIMEOUT:-120}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "e2e-clients: node and npm are needed (Node.js 20 or later)" >&2
  exit 1
fi
stamp="$CACHE/.installed-$(printf '%s ' "${PACKAGES[@]}" | md5sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  echo "e2e-clients: installing ${PACKAGES[*]} into $CACHE" >&2
  mkdir -p "$CACHE"
  npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error "${PACKAGES[@]}" >&2
  touch "$stamp"
fi
bin="$CACHE/node_modules/.bin"
PY_PACKAGES=("openai==3.57.0" "anthropic==2.16.0")
py_stamp="$CACHE/.py-installed-$(printf '%s ' "${PY_PACKAGES[@]}" | md5sum | cut -c1-12)"
if [ ! -f "$py_stamp" ]; then
  echo "e2e-clients: installing ${PY_PACKAGES[*]} into $CACHE/py" >&2
  if ! python3 -m venv "$CACHE/py" >&2; then
    echo "e2e-clients: python3 -m venv failed; install Python's venv module (Debian: python3-venv)" >&2
    exit 1
  fi
  "$CACHE/py/bin/pip" install --quiet --disable-pip-version-check "${PY_PACKAGES[@]}" >&2
  touch "$py_stamp"
fi
py="$CACHE/py/bin/python"
# Aider in a venv of its own: it pins its own versions of the SDKs.
AIDER_PACKAGE="aider-chat==0.86.2"
aider_stamp="$CACHE/.aider-installed-$(echo "$AIDER_PACKAGE" | md5sum | cut -c1-12)"
if [ ! -f "$aider_stamp" ]; then
  echo "e2e-clients: installing $AIDER_PACKAGE into $CACHE/aider" >&2
  python3 -m venv "$CACHE/aider" >&2
  "$CACHE/aider/bin/pip" install --quiet --disable-pip-version-check "$AIDER_PACKAGE" >&2
  touch "$aider_stamp"
fi
aider="$CACHE/aider/bin/aider"

cargo build --locked --quiet
fcm=$PWD/target/debug/fcm
source scripts/common.sh

export HOME="$work/home" FCM_HOME="$work/fcm"
mkdir -p "$HOME" "$work/project"
start_fake "$fcm"
cat > "$work/catalog.json" <<JSON
{"version":1,"providers":[{"id":"fake","name":"Fake","baseUrl":"$url","keyRequired":false,
 "models":[{"id":"ok","tier":"S","context":131072},{"id":"tool_round_trip","tier":"S","context":131072},
  {"id":"noisy_tool_round_trip","tier":"S","context":131072},
  {"id":"sse_error_first","tier":"S","context":131072},{"id":"thinks_tags","tier":"S","context":131072},
  {"id":"cut_tool_args","tier":"S","context":131072},{"id":"slow:3000","tier":"S","context":131072},
  {"id":"ok#panel","tier":"S","context":131072},{"id":"ok#judge","tier":"S","context":131072},
  {"id":"signed_tool_turns","tier":"S","context":131072},{"id":"sse_error_after_content","tier":"S","context":131072},
  {"id":"continues","tier":"S","context":131072},{"id":"paid_notice_streamed","tier":"S","context":131072},
  {"id":"free_tier_exhausted","tier":"S","context":131072},{"id":"aider_edit","tier":"S","context":131072},
  {"id":"finish_then_drop","tier":"S","context":131072},{"id":"restarts","tier":"S","context":131072},
  {"id":"sse_error_after_content#again","tier":"S","context":131072},{"id":"patches","tier":"S","context":131072},
  {"id":"sse_error_after_content#codex","tier":"S","context":131072},
  {"id":"sse_error_after_content#slow","tier":"S","context":131072},{"id":"continues:6000","tier":"S","context":131072}]},
 {"id":"small","name":"Small","baseUrl":"$url","keyRequired":false,"models":[{"id":"ok","tier":"S","context":32768}]},
 {"id":"keyed","name":"Keyed","baseUrl":"$url","apiKeyEnv":["FAKE_KEYED_KEY"],"keyRequired":true,
  "models":[{"id":"echo_masked_key","tier":"S","context":131072}]},
 {"id":"budget","name":"Spent","baseUrl":"$url","keyRequired":false,"quota":{"requestsPerDay":0},
  "models":[{"id":"ok#spent","tier":"S","context":131072}]},
 {"id":"agent","name":"Agent","baseUrl":"$url","keyRequired":false,
  "models":[{"id":"ok#one","tier":"S+","context":131072},{"id":"ok#two","tier":"S+","context":131072}]}]}
JSON
# The key the keyed provider echoes back, masked: none of it may reach a tool.
export FAKE_KEYED_KEY=sk-E2ESECRETKEY0123456789
export FCM_CATALOG="$work/catalog.json"
# A set whose first model streams an error before any content, and one whose first model
# sends a tool call with cut-off arguments.
"$fcm" sets add failover fake/sse_error_first fake/ok > /dev/null
"$fcm" sets add broken-call fake/cut_tool_args fake/tool_round_trip > /dev/null
# A set whose first model's budget for today is spent (its catalog quota allows 0 a day).
"$fcm" sets add budget-spent budget/ok#spent fake/ok > /dev/null
# A race between a slow model and a fast one, and a fusion of two judged by a third.
"$fcm" sets add race-quick --strategy race fake/slow:3000 fake/ok > /dev/null
"$fcm" sets add fused --strategy fusion --judge fake/ok#judge fake/ok#panel fake/ok > /dev/null
# A set whose first model's stream breaks after its first words: the next one finishes it.
"$fcm" sets add broken-stream fake/sse_error_after_content fake/continues > /dev/null
# The same break finished by a model that starts the answer over; and a model that sends its
# whole answer with its finish reason, then drops the connection before the body's end.
"$fcm" sets add broken-restarts fake/sse_error_after_content#again fake/restarts > /dev/null
"$fcm" sets add finished-cut fake/finish_then_drop fake/continues > /dev/null
# The same break finished by a model that is silent 6 s first: the tools hear fcm's
# keep-alive comments meanwhile.
"$fcm" sets add broken-slow fake/sse_error_after_content#slow fake/continues:6000 > /dev/null
# A set whose first model went paid and streams the provider's notice as its answer, and one
# whose first model's free grant is used up (DashScope's 403).
"$fcm" sets add gone-paid fake/paid_notice_streamed fake/ok > /dev/null
"$fcm" sets add grant-used-up fake/free_tier_exhausted fake/ok > /dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$fcm" serve --port "$port" 2> "$work/serve.log" &
serve_pid=$!
for _ in $(seq 200); do [ -s "$FCM_HOME/serve.json" ] && break; sleep 0.05; done

# Keep the tools offline and quiet.
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
export CLINE_SESSION_BACKEND_MODE=local CLINE_NO_AUTO_UPDATE=1 E2E_TEST=true
mkdir -p "$HOME/.cline/data/settings"
echo '{"telemetryOptOut": true, "autoUpdateEnabled": false}' > "$HOME/.cline/data/settings/global-settings.json"

# Points every tool at a model (`fcm:fake/<id>`), a set (`fcm:<set>`) or `fcm` itself.
configure() {
  local model="fcm:$1"
  [ "$1" = fcm ] && model=fcm
  for tool in claude-code codex cline; do
    "$fcm" install "$tool" --port "$port" --model "$model" > /dev/null
  done
  # Codex: no telemetry, no remote plugins (appended once; fcm's keys are already there).
  if ! grep -q '^\[analytics\]' "$HOME/.codex/config.toml"; then
    printf '\n[analytics]\nenabled = false\n\n[features]\nplugins = false\nremote_plugin = false\napps = false\n' >> "$HOME/.codex/config.toml"
  fi
}

# Stops fcm serve and starts it again on the same port (state kept in $FCM_HOME).
restart_serve() {
  kill "$serve_pid"
  wait "$serve_pid" 2>/dev/null || true
  # (Not always this shell's child: Cline's hook below starts one.)
  while kill -0 "$serve_pid" 2>/dev/null; do sleep 0.05; done
  "$fcm" serve --port "$port" 2>> "$work/serve.log" &
  serve_pid=$!
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.05; done
}

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { # name, expected text, command...
  check_without "$1" "$2" "" "${@:3}"
}
check_without() { # name, expected text, text that must not appear ("" for none), command...
  local name=$1 want=$2 unwanted=$3
  shift 3
  local out
  out=$(cd "$work/project" && timeout "$RUN_LIMIT" "$@" 2>&1) || true
  [ -n "${FCM_E2E_SHOW:-}" ] && printf "%s\n" "$out" > "$FCM_E2E_SHOW.$(echo "$name" | tr " " _)"
  if grep -qF "$want" <<< "$out" && { [ -z "$unwanted" ] || ! grep -qF "$unwanted" <<< "$out"; }; then
    pass "$name"
  else
    fail "$name: expected \"$want\"${unwanted:+ and no \"$unwanted\"}; output:"
    tail -n 20 <<< "$out" | sed 's/^/    /'
  fi
}
# each_tool WHAT EXPECTED UNWANTED PROMPT [ALLOWED]: the same case for Claude Code, Codex and
# Cline, named "<tool> WHAT". With ALLOWED (Claude Code's --allowedTools pattern) the prompt
# makes the tool run a command: Cline is given -y to run it without asking.
each_tool() {
  local what=$1 want=$2 unwanted=$3 prompt=$4 allowed=${5:-}
  if [ -n "$allowed" ]; then
    check_without "claude-code $what" "$want" "$unwanted" "$bin/claude" -p "$prompt" --allowedTools "$allowed"
  else
    check_without "claude-code $what" "$want" "$unwanted" "$bin/claude" -p "$prompt"
  fi
  check_without "codex $what" "$want" "$unwanted" "$bin/codex" exec --skip-git-repo-check --ephemeral "$prompt"
  check_without "cline $what" "$want" "$unwanted" "$bin/cline" ${allowed:+-y} "$prompt"
}

configure fake/ok
each_tool "plain reply" "Hello from ok." "" "say hi"

configure fake/tool_round_trip
each_tool "tool round trip" "The tool said fcm-tool-ok." "" "run the marker command" "Bash(echo:*)"

# A noisy tool output: the fake model asks the shell tool for colours, a progress line
# redrawn with CRs and a line printed 40 times, then answers with its verdict on what
# reached it (compressed: no escape, the last progress state, the line once with its count).
configure fake/noisy_tool_round_trip
each_tool "noisy tool round trip, compressed" "The noisy tool said fcm-noisy-ok, compressed." "" "run the noisy command" "Bash"
saved=$("$fcm" history --json -n 500 | python3 -c '
import json, sys
h = [e for e in json.load(sys.stdin) if e.get("servedModel") == "fake/noisy_tool_round_trip"]
print(sum(1 for e in h if e.get("savedTokens", 0) > 0), sum(e.get("savedTokens", 0) for e in h))')
read -r saved_requests saved_tokens <<< "$saved"
if [ "$saved_requests" -ge 3 ]; then
  pass "compression saved ~$saved_tokens tokens over $saved_requests noisy tool results (history savedTokens)"
else
  fail "compression: $saved_requests requests with savedTokens, ~$saved_tokens tokens"
fi

configure failover
each_tool "after a failover" "Hello from ok." "" "say hi"

# The first model's tool call cannot run: fcm fails over and the agent's round trip completes.
configure broken-call
each_tool "tool round trip after a broken call" "The tool said fcm-tool-ok." "" "run the marker command" "Bash(echo:*)"

# Gemini 3's rule: each tool call carries a thought signature that must come back on the
# next turn, or the provider refuses it (400). None of the tools keeps it; fcm puts it back.
configure fake/signed_tool_turns
each_tool "two tool turns with thought signatures" "Both tool turns kept their thought signatures" "" "run the marker command twice" "Bash(echo:*)"
# Codex under a model name it does not know offers no apply_patch tool but tells the model
# to use it: fcm offers it, and the model's patch comes back as the command Codex runs. The
# file is really written (Codex may write in the project: workspace-write).
configure fake/patches
rm -f "$work/project/hello.txt"
check "codex applies a patch through fcm's apply_patch" "fcm-patch-done" "$bin/codex" exec --skip-git-repo-check --ephemeral -s workspace-write "add hello.txt"
if grep -qx "fcm-patch-ok" "$work/project/hello.txt" 2>/dev/null; then
  pass "codex: the patch is in hello.txt"
else
  fail "codex: hello.txt holds $(cat "$work/project/hello.txt" 2>/dev/null || echo nothing)"
fi
rm -f "$work/project/hello.txt"

# The same conversation goes on after fcm serve restarts: Claude Code and Codex keep no signature,
# fcm kept them in carry.json and puts them back (this model is not named as Gemini, so no
# placeholder would get it through: without them the next turn is refused).
configure fake/signed_tool_turns
check "claude-code two tool turns before a restart" "Both tool turns kept their thought signatures" "$bin/claude" -p "run the marker command twice" --allowedTools "Bash(echo:*)"
check "codex two tool turns before a restart" "Both tool turns kept their thought signatures" "$bin/codex" exec --skip-git-repo-check "run the marker command twice"
restart_serve
check "claude-code the tool conversation goes on after fcm serve restarts" "Both tool turns kept their thought signatures (2 calls signed)" "$bin/claude" -p --continue "what did the command print?" --allowedTools "Bash(echo:*)"
check "codex the tool conversation goes on after fcm serve restarts" "Both tool turns kept their thought signatures (2 calls signed)" "$bin/codex" exec --skip-git-repo-check resume --last "what did the command print?"
# Cline resumes a session (--id) only in its terminal interface: here fcm serve restarts in
# the middle of one task instead, from Cline's hook after its first tool call, and the
# task's next turns reach the new server.
mkdir -p "$HOME/.cline/hooks"
echo "$serve_pid" > "$work/serve.pid"
cat > "$HOME/.cline/hooks/PostToolUse" <<HOOK
#!/usr/bin/env bash
cat > /dev/null
if [ ! -e "$work/restarted" ]; then
  touch "$work/restarted"
  pid=\$(cat "$work/serve.pid")
  kill "\$pid"
  while kill -0 "\$pid" 2>/dev/null; do sleep 0.05; done
  nohup "$fcm" serve --port "$port" >> "$work/serve.log" 2>&1 < /dev/null &
  echo \$! > "$work/serve.pid"
  for _ in \$(seq 200); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.05; done
fi
echo '{}'
HOOK
chmod +x "$HOME/.cline/hooks/PostToolUse"
check "cline the tool conversation goes on when fcm serve restarts between its turns" "Both tool turns kept their thought signatures (2 calls signed)" "$bin/cline" -y "run the marker command twice"
serve_pid=$(cat "$work/serve.pid")
rm -f "$HOME/.cline/hooks/PostToolUse"
if [ -e "$work/restarted" ]; then
  pass "cline: fcm serve restarted between the task's turns"
else
  fail "cline: the hook that restarts fcm serve never ran"
fi

# Codex under names it knows as GPT models, routed by fcm's default set: with gpt-5.5 Codex
# offers apply_patch as a freeform (custom) tool; with gpt-6.2-sol it runs in code mode (one
# `exec` tool that runs JavaScript, every other tool declared inside it), and fcm offers the
# declared tools as functions and calls them through `exec`. Either way the model's patch is
# applied: hello.txt is written.
"$fcm" sets add codex-gpt fake/patches > /dev/null
"$fcm" sets use codex-gpt > /dev/null
restart_serve
for name in gpt-5.5 gpt-6.2-sol; do
  rm -f "$work/project/hello.txt"
  check "codex as $name applies a patch" "fcm-patch-done" "$bin/codex" exec --skip-git-repo-check --ephemeral -m "$name" -s workspace-write "add hello.txt"
  if grep -qx "fcm-patch-ok" "$work/project/hello.txt" 2>/dev/null; then
    pass "codex as $name: the patch is in hello.txt"
  else
    fail "codex as $name: hello.txt holds $(cat "$work/project/hello.txt" 2>/dev/null || echo nothing)"
  fi
done
rm -f "$work/project/hello.txt"
# And a shell command: in code mode it too is one of the tools `exec` declares.
"$fcm" sets add codex-gpt-tools fake/tool_round_trip > /dev/null
"$fcm" sets use codex-gpt-tools > /dev/null
restart_serve
for name in gpt-5.5 gpt-6.2-sol; do
  check "codex as $name tool round trip" "The tool said fcm-tool-ok." "$bin/codex" exec --skip-git-repo-check --ephemeral -m "$name" "run the marker command"
done
"$fcm" sets use none > /dev/null
restart_serve

# A stream that breaks after its first words: the next model finishes the answer, and the
# tool shows one answer; pinned to the broken model, the client is told it broke (the
# OpenAI SDK raises on the error frame, never a clean finish).
configure broken-stream
each_tool "gets a broken answer finished" "Partial answer from sse_error_after_content and the rest (continued:" "" "say hi"
check "openai sdk raises on a stream that broke" "raised: the model's answer broke off" "$py" -c "
import openai
c = openai.OpenAI(base_url='http://127.0.0.1:$port/v1', api_key='unused')
s = c.chat.completions.create(model='fcm:fake/sse_error_after_content', stream=True, messages=[{'role': 'user', 'content': 'say hi'}])
try:
    text = ''.join(ch.choices[0].delta.content or '' for ch in s if ch.choices)
    print('finished cleanly:', text)
except openai.APIError as e:
    print('raised:', e.message)"

# The model that finishes it is slow to start: fcm's SSE keep-alive comments reach each
# tool between the first model's words and the rest, and each shows one answer.
configure broken-slow
each_tool "gets a broken answer finished by a slow model" "Partial answer from sse_error_after_content#slow and the rest (continued:" "" "say hi"

# The model that finishes a broken answer starts it over: the tool shows its beginning once
# (fcm drops what the client already has), never "...againPartial answer from...". (A model
# of its own breaks here: the one above is behind its open breaker by now.)
configure broken-restarts
each_tool "gets a broken answer finished without a repeat" "Partial answer from sse_error_after_content#again and the rest (restarted)" "againPartial" "say hi"

# Pinned to one model whose stream breaks after its first words, Codex is told the answer
# broke off (a failed response, never a completed one) and never shows the partial answer as
# a reply.
configure fake/sse_error_after_content#codex
check_without "codex is told a broken answer broke off" "the model's answer broke off" "Partial answer from" "$bin/codex" exec --skip-git-repo-check --ephemeral "say hi"

# A whole answer with its finish reason whose connection drops before the body's end is
# finished: shown once, never handed to another model to continue.
configure finished-cut
each_tool "keeps a finished answer whose connection dropped" "Hello from finish_then_drop." "(continued" "say hi"

# A model gone paid streams the provider's notice a few words at a time: fcm sees it before
# the tool gets a word of it and the next model answers.
configure gone-paid
each_tool "past a paid-plan notice streamed as the answer" "Hello from ok." "requires a paid plan" "say hi"

# A used-up free grant is met once and remembered: the three tools' requests go to it once
# in all, and `fcm breakers` says why it is out and until when.
configure grant-used-up
each_tool "past a used-up free grant" "Hello from ok." "" "say hi"
sent=$("$fcm" history --json -n 500 | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin) for a in e.get("attempts", []) if a["model"] == "fake/free_tier_exhausted"))')
held=$("$fcm" breakers --json | python3 -c '
import json, sys
print(next((r.get("heldFor", "") for r in json.load(sys.stdin) if r["model"] == "fake/free_tier_exhausted"), ""))')
if [ "$sent" = 1 ] && [ "$held" = quota_exhausted ]; then
  pass "a used-up grant is asked once and shown as quota_exhausted"
else
  fail "a used-up grant: $sent requests to it, breakers say \"$held\""
fi

# The model thinks in <think> tags cut mid-tag: the answer arrives without them.
configure fake/thinks_tags
each_tool "reasoning apart" "Hello from thinks." "<think>" "say hi"
# ... and the reasoning where each tool shows reasoning: a thinking block for Claude Code,
# the reasoning summary Codex prints before its answer, Cline's [thinking] line.
check "claude-code shows the thinking" '"thinking":"First, the user greets me."' "$bin/claude" -p "say hi" --output-format stream-json --verbose
check "codex shows the reasoning" "First, the user greets me." "$bin/codex" exec --skip-git-repo-check --ephemeral "say hi"
check "cline shows the thinking" "[thinking]" "$bin/cline" "say hi"

# The provider echoes the key it was sent, masked ("sk-E2ESE****6789"): fcm removes it.
configure keyed/echo_masked_key
each_tool "never shows a key" "Your key is" "sk-E2ESE" "say hi"

# The first model's budget is spent: passed over before dispatch, never sent a request.
configure budget-spent
each_tool "past a spent budget" "Hello from ok." "" "say hi"
read -r budget_skips budget_sent < <("$fcm" history --json | python3 -c '
import json, sys
h = json.load(sys.stdin)
skips = sum(1 for e in h for s in e["skipped"] if s["model"] == "budget/ok#spent" and s["reason"] == "quota_budget")
sent = sum(1 for e in h for a in e["attempts"] if a["model"] == "budget/ok#spent")
print(skips, sent)')
if [ "$budget_skips" -ge 3 ] && [ "$budget_sent" -eq 0 ]; then
  pass "the spent budget was skipped $budget_skips times (quota_budget) and never sent a request"
else
  fail "spent budget: $budget_skips quota_budget skips, $budget_sent requests sent to it"
fi

# A race: the fast model's answer, the slow one cancelled (raced_out, not a failure).
configure race-quick
each_tool "wins a race" "Hello from ok." "" "say hi"
raced_out=$(grep -c 'fake/ok:200->fake/slow:3000:raced_out' "$work/serve.log" || true)
slow_failures=$("$fcm" breakers --json | python3 -c '
import json, sys
print(sum(b.get("consecutiveFailures", 0) for b in json.load(sys.stdin) if b["model"] == "fake/slow:3000"))')
if [ "$raced_out" -ge 3 ] && [ "$slow_failures" -eq 0 ]; then
  pass "the slow racer was cancelled $raced_out times, with no failure on its breaker"
else
  fail "race: $raced_out raced_out decisions, $slow_failures failures on the slow model"
fi

# A fusion: the tools offer tools, so they are not fused (the first panel model answers);
# the SDKs ask without tools and get the judge's merge as a stream.
configure fused
each_tool "with a fusion set (tools: not fused)" "Hello from ok#panel." "" "say hi"
check "openai sdk gets the judge's merge" "Hello from ok#judge." "$py" -c "
import openai
c = openai.OpenAI(base_url='http://127.0.0.1:$port/v1', api_key='unused')
s = c.chat.completions.create(model='fcm:fused', stream=True, messages=[{'role': 'user', 'content': 'say hi'}])
print(''.join(ch.choices[0].delta.content or '' for ch in s if ch.choices))"
check "anthropic sdk gets the judge's merge" "Hello from ok#judge." "$py" -c "
import anthropic
c = anthropic.Anthropic(base_url='http://127.0.0.1:$port', api_key='unused')
with c.messages.stream(model='fcm:fused', max_tokens=100, messages=[{'role': 'user', 'content': 'say hi'}]) as s:
    print(''.join(s.text_stream))"
judged=$(grep -c 'fake/ok#panel:200->fake/ok:200->fake/ok#judge:200' "$work/serve.log" || true)
if [ "$judged" -ge 2 ]; then
  pass "the panel answered and the judge merged, for both SDKs"
else
  fail "fusion: $judged judged decisions in the serve log"
  grep -F 'fcm:fused' "$work/serve.log" | tail -n 6 | sed 's/^/    /'
fi

served=$(grep -c '!served|' "$work/serve.log" || true)
failed_over=$(grep -c 'fake/sse_error_first:error_payload->fake/ok:200' "$work/serve.log" || true)
broken_calls=$(grep -c 'fake/cut_tool_args:invalid_tool_call->fake/tool_round_trip:200' "$work/serve.log" || true)
echo "fcm served $served requests for the tools, $failed_over after an error stream, $broken_calls after a broken tool call"
if [ "$failed_over" -lt 3 ] || [ "$broken_calls" -lt 3 ]; then
  fail "failover: expected each tool's first request of both sets to fail over (serve log below)"
  grep -F -e 'fcm:failover' -e 'fcm:broken-call' "$work/serve.log" | tail -n 12 | sed 's/^/    /'
fi

# One session, two turns: the model that served the first turn slows down between them (a
# bench finds the other one faster), and the second turn is still served by it.
latency() { curl -sf "${url%/v1}/__fake/latency" -H 'content-type: application/json' -d "{\"model\":\"ok#$1\",\"ms\":$2}" > /dev/null; }
bench_agents() { "$fcm" bench --model agent/ok#one --model agent/ok#two --pings 2 > /dev/null; sleep 6; }
history_len() { "$fcm" history --json -n 500 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# The model (one or two) that served the latest request of this case, and its session.
last_served() { "$fcm" history --json -n 1 | python3 -c '
import json, sys
e = json.load(sys.stdin)[-1]
print(e.get("servedModel", "").rsplit("#", 1)[-1], e.get("session", ""))'; }
configure fcm
for tool in claude codex; do
  latency one 0; latency two 0; bench_agents
  if [ "$tool" = claude ]; then
    check "claude-code session turn 1" "Hello from ok#" "$bin/claude" -p "say hi"
  else
    check "codex session turn 1" "Hello from ok#" "$bin/codex" exec --skip-git-repo-check "say hi"
  fi
  read -r first session < <(last_served)
  other=$([ "$first" = one ] && echo two || echo one)
  latency "$first" 400; bench_agents
  if [ "$tool" = claude ]; then
    check "claude-code session turn 2 on the same model, slowed down" "Hello from ok#$first." "$bin/claude" -p --continue "say it again"
  else
    check "codex session turn 2 on the same model, slowed down" "Hello from ok#$first." "$bin/codex" exec --skip-git-repo-check resume --last "say it again"
  fi
  read -r second session_two < <(last_served)
  kept=$("$fcm" history --json -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1].get("affinity"))')
  if [ "$second" = "$first" ] && [ "$session_two" = "$session" ] && [ "$kept" = kept ]; then
    pass "$tool: both turns of one session served by ok#$first (affinity $kept), ok#$other faster"
  else
    fail "$tool: turn 1 ok#$first ($session), turn 2 ok#$second ($session_two, affinity $kept)"
    "$fcm" history -n 4 | sed 's/^/    /'
  fi
  latency "$first" 0
done

# OpenCode and Aider, each installed over a user's own settings with comments: a plain
# answer, a tool or edit round trip, every model slot through fcm (OpenCode's title request
# and Aider's commit message too), and an uninstall that gives the user's bytes back.
export OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1
export LITELLM_LOCAL_MODEL_COST_MAP=True
opencode=("$bin/opencode" run)
aider_run=("$aider" --no-check-update --no-show-release-notes --yes-always --no-pretty)
oc_dir="$HOME/.config/opencode"
mkdir -p "$oc_dir"
oc_user='{
    // my own settings
    "theme": "tokyonight",
    "enabled_providers": ["anthropic"], /* nothing else */
    "model": "anthropic/claude-sonnet-4-5",
    "small_model": "anthropic/claude-haiku-4-5",
}
'
printf '%s' "$oc_user" > "$oc_dir/opencode.jsonc"
# mark: notes the requests in the history now; new_entries: the ones since, as JSON.
mark() { "$fcm" history --json -n 500 | python3 -c '
import json, sys
print("\n".join(e["id"] for e in json.load(sys.stdin)))' > "$work/mark"; }
new_entries() { "$fcm" history --json -n 500 | python3 -c '
import json, sys
seen = set(open(sys.argv[1]).read().split())
json.dump([e for e in json.load(sys.stdin) if e["id"] not in seen], sys.stdout)' "$work/mark"; }
# The requests since the mark: how many, how many served, and the models that served them.
since() { new_entries | python3 -c '
import json, sys
h = json.load(sys.stdin)
print(len(h), sum(1 for e in h if e["outcome"] == "served"), " ".join(sorted({e.get("servedModel") or "-" for e in h})))'; }
oc_install() { "$fcm" install opencode --port "$port" --model "$1" > /dev/null; }
mark
oc_install fcm:fake/ok
check "opencode plain reply" "Hello from ok." "${opencode[@]}" "say hi"
read -r n ok models < <(since)
# The title request (small_model) and the answer: both to fcm, both served.
if [ "$n" -ge 2 ] && [ "$n" = "$ok" ] && [ "$models" = fake/ok ]; then
  pass "opencode: all $n requests (title and answer) through fcm, served"
else
  fail "opencode: $n requests, $ok served, by $models"
fi
oc_install fcm:fake/tool_round_trip
check "opencode tool round trip" "The tool said fcm-tool-ok." "${opencode[@]}" "run the marker command"
# Its title request offers no tools: a broken call there fails over like any other.
mark
oc_install fcm:broken-call
check "opencode tool round trip after a broken call" "The tool said fcm-tool-ok." "${opencode[@]}" "run the marker command"
# Every request (the title's, which offers no tools, too) is served by the model after the
# broken one: none hands the broken call to OpenCode.
read -r broken served_by < <(new_entries | python3 -c '
import json, sys
h = json.load(sys.stdin)
print(sum(1 for e in h if any(a.get("kind") == "invalid_tool_call" for a in e["attempts"])),
      " ".join(sorted({e.get("servedModel") or "-" for e in h})))')
if [ "$broken" -ge 1 ] && [ "$served_by" = fake/tool_round_trip ]; then
  pass "opencode: the broken call failed over ($broken requests), every request served by the next model"
else
  fail "opencode: $broken requests failed over from the broken call, served by $served_by"
fi
"$fcm" install opencode --uninstall > /dev/null
if cmp -s <(printf '%s' "$oc_user") "$oc_dir/opencode.jsonc"; then
  pass "opencode: uninstall gives the user's opencode.jsonc back to the byte"
else
  fail "opencode: opencode.jsonc after uninstall differs"
  diff <(printf '%s' "$oc_user") "$oc_dir/opencode.jsonc" | sed 's/^/    /'
fi
# A provider entry of the user's own without a `limit`: OpenCode asks for 32,000 tokens of
# answer, more than a 32k window holds with the prompt; fcm lowers it instead of refusing.
mkdir -p "$work/oc-nolimit/opencode"
# (A model id without `#`: OpenCode reads what follows `#` in a model name as a variant.)
cat > "$work/oc-nolimit/opencode/opencode.json" <<JSON
{"\$schema": "https://opencode.ai/config.json", "model": "fcm/fcm:small/ok", "small_model": "fcm/fcm:small/ok",
 "provider": {"fcm": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "http://127.0.0.1:$port/v1", "apiKey": "fcm-local"},
  "models": {"fcm:small/ok": {"name": "fcm:small/ok"}}}}}
JSON
mark
check "opencode with a 32,000-token default budget on a 32k model" "Hello from ok." env XDG_CONFIG_HOME="$work/oc-nolimit" "${opencode[@]}" "say hi"
lowered=$(new_entries | python3 -c '
import json, sys
h = json.load(sys.stdin)
print(sum(1 for e in h if e.get("maxTokens") and any(n.startswith("max_tokens_lowered:32000_to_") for n in e.get("notes", []))))')
if [ "$lowered" -ge 1 ]; then
  pass "opencode: the default budget was lowered to fit ($lowered requests), none refused"
else
  fail "opencode: no request had its budget lowered"
fi

# Aider, in a git repository: an answer, then an edit whose commit message the weak model
# writes (through fcm too).
aider_user='# my aider settings
dark-mode: true   # easier on the eyes
auto-commits: true
'
printf '%s' "$aider_user" > "$HOME/.aider.conf.yml"
mkdir -p "$work/aider-project"
(cd "$work/aider-project" && git init -q && git config user.email e2e@example.com && git config user.name e2e \
  && echo "placeholder" > hello.txt && git add hello.txt && git commit -qm init)
aider_check() { # name, expected text, aider arguments...
  local name=$1 want=$2
  shift 2
  local out
  out=$(cd "$work/aider-project" && timeout "$RUN_LIMIT" "${aider_run[@]}" "$@" < /dev/null 2>&1) || true
  [ -n "${FCM_E2E_SHOW:-}" ] && printf "%s\n" "$out" > "$FCM_E2E_SHOW.$(echo "$name" | tr " " _)"
  if grep -qF "$want" <<< "$out"; then pass "$name"; else
    fail "$name: expected \"$want\"; output:"
    tail -n 20 <<< "$out" | sed 's/^/    /'
  fi
}
"$fcm" install aider --port "$port" --model fcm:fake/ok > /dev/null
aider_check "aider plain reply" "Hello from ok." --message "say hi"
"$fcm" install aider --port "$port" --model fcm:fake/aider_edit > /dev/null
mark
aider_check "aider edit round trip" "Applied edit to hello.txt" --message "put the marker in hello.txt" hello.txt
read -r n ok models < <(since)
subject=$(cd "$work/aider-project" && git log -1 --format=%s)
if grep -qx fcm-edit-ok "$work/aider-project/hello.txt" && [ "$subject" = "Write fcm-edit-ok into hello.txt" ] \
  && [ "$n" -ge 2 ] && [ "$n" = "$ok" ] && [ "$models" = fake/aider_edit ]; then
  pass "aider: the edit is in hello.txt, its commit message came through fcm ($n requests)"
else
  fail "aider: hello.txt $(cat "$work/aider-project/hello.txt"), commit \"$subject\", $n requests, $ok served, by $models"
fi
"$fcm" install aider --uninstall > /dev/null
if cmp -s <(printf '%s' "$aider_user") "$HOME/.aider.conf.yml" && [ ! -e "$HOME/.aider.model.metadata.json" ]; then
  pass "aider: uninstall gives .aider.conf.yml back to the byte and removes the model file fcm made"
else
  fail "aider: after uninstall the files differ"
fi
# In a home without an Aider config, install then uninstall leaves nothing, and Aider runs.
rm "$HOME/.aider.conf.yml"
"$fcm" install aider --port "$port" > /dev/null && "$fcm" install aider --uninstall > /dev/null
if [ ! -e "$HOME/.aider.conf.yml" ] && (cd "$work/aider-project" && "$aider" --version > /dev/null 2>&1); then
  pass "aider: install and uninstall in a fresh home leave no file, and aider still starts"
else
  fail "aider: a fresh home after uninstall: $(ls -a "$HOME" | tr '\n' ' ')"
fi

# With an access token: the tools send the one `fcm install` wrote; nothing else gets in.
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null || true
export FCM_TOKEN=e2e-access-token-0123456789
"$fcm" serve --port "$port" 2>> "$work/serve.log" &
serve_pid=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.05; done
configure fake/ok
each_tool "with an access token" "Hello from ok." "" "say hi"
refused=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/chat/completions" \
  -H 'content-type: application/json' -d '{"model":"fcm","messages":[{"role":"user","content":"hi"}]}')
if [ "$refused" = 401 ]; then
  pass "a request without the token is refused"
else
  fail "a request without the token got $refused, not 401"
fi
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
