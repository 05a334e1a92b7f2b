#!/usr/bin/env bash
# Replays docker/Dockerfile without a Docker engine: the build stage's COPY and `RUN npm` steps,
# verbatim, in an empty folder (the apt-get step is skipped: this machine has python3, make and
# g++), then the runtime stage's COPY --from=build steps into a second folder. Checks that the
# runtime folder holds dist/main.js and the migrate CLI, no devDependency, and that it works
# without the build tools: the migrate CLI runs, the app boots, the HEALTHCHECK command passes
# and SIGTERM ends it with exit code 0.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dockerfile="$root/docker/Dockerfile"
work="$(mktemp -d "${TMPDIR:-/tmp}/listing-docker-build.XXXXXX")"
app_pid=""
cleanup() {
  if [ -n "$app_pid" ] && kill -0 "$app_pid" 2>/dev/null; then kill -KILL "$app_pid"; fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
build="$work/build"
runtime="$work/runtime"
mkdir -p "$build" "$runtime"
# Reuse the machine's npm cache; the commands themselves are the Dockerfile's.
export npm_config_prefer_offline=true npm_config_update_notifier=false

say() { printf '[verify-build %s] %s\n' "$(date +%T)" "$*"; }
fail() { echo "verify-build: $*" >&2; exit 1; }

# The Dockerfile's instructions, continuation lines joined, comments dropped: "stage<TAB>line".
instructions() {
  sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$dockerfile" | grep -vE '^\s*(#|$)' |
    awk 'BEGIN { stage = "preamble" } /^FROM /{ stage = ($NF == "build" || $NF == "runtime") ? $NF : "other" } { print stage "\t" $0 }'
}

while IFS=$'\t' read -r stage line; do
  case "$stage:$line" in
    build:COPY\ --from=*|build:FROM\ *|build:WORKDIR\ *|runtime:FROM\ *|runtime:WORKDIR\ *) ;;
    build:COPY\ *)
      read -r -a words <<<"${line#COPY }"
      dest="${words[-1]}"
      for src in "${words[@]:0:${#words[@]}-1}"; do
        say "build: COPY $src -> $dest"
        mkdir -p "$build/$dest"
        # Docker copies a directory's contents into the destination, a file into it.
        if [ -d "$root/$src" ]; then cp -R "$root/$src/." "$build/$dest/"; else cp "$root/$src" "$build/$dest/"; fi
      done
      ;;
    build:RUN\ npm\ *)
      say "build: ${line#RUN }"
      (cd "$build" && eval "${line#RUN }")
      ;;
    build:RUN\ apt-get\ *)
      say "build: skipped (build tools come from this machine): ${line:0:60}..."
      ;;
    runtime:COPY\ --from=build\ *)
      read -r -a words <<<"${line#COPY --from=build }"
      src="${words[0]#/app/}"
      dest="${words[1]#./}"
      say "runtime: COPY --from=build /app/$src -> $dest"
      cp -R "$build/$src" "$runtime/$dest"
      ;;
    runtime:RUN\ mkdir\ *)
      mkdir -p "$runtime/data"
      ;;
    runtime:*|preamble:ARG\ *) ;;
    *)
      echo "verify-build: no replay for this instruction: $line" >&2
      exit 1
      ;;
  esac
done < <(instructions)

say "checking the runtime folder"
for file in dist/main.js dist/cli/migrate.cli.js node_modules/better-sqlite3/prebuilds/linux-x64.node; do
  test -f "$runtime/$file" || fail "missing in the runtime folder: $file"
done
node -e '
  // A devDependency may stay only when a production package needs it (mysql2 needs @types/node).
  const fs = require("fs");
  const path = require("path");
  const root = process.argv[1];
  const pkg = require(root + "/package.json");
  const needed = new Set(Object.keys(pkg.dependencies));
  const manifests = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
      const full = path.join(dir, entry.name);
      if (entry.name.startsWith("@")) { walk(full); continue; }
      if (fs.existsSync(full + "/package.json")) manifests.push(full + "/package.json");
      if (fs.existsSync(full + "/node_modules")) walk(full + "/node_modules");
    }
  };
  walk(root + "/node_modules");
  for (const manifest of manifests) {
    const m = JSON.parse(fs.readFileSync(manifest, "utf8"));
    for (const name of Object.keys({ ...m.dependencies, ...m.optionalDependencies, ...m.peerDependencies })) needed.add(name);
  }
  const left = Object.keys(pkg.devDependencies).filter((name) =>
    fs.existsSync(root + "/node_modules/" + name) && !needed.has(name));
  if (left.length) { console.error("devDependencies in the production install: " + left.join(", ")); process.exit(1); }
  const kept = Object.keys(pkg.devDependencies).filter((name) => fs.existsSync(root + "/node_modules/" + name));
  console.log("[verify-build] " + manifests.length + " production packages; devDependencies present only as dependencies of those: " + (kept.join(", ") || "none"));
' "$runtime"

cd "$runtime"
export NODE_ENV=production SQLITE_PATH="$work/listing.sqlite" SEED_DEMO_DATA=false LOG_LEVEL=warn
say "runtime: node dist/cli/migrate.cli.js"
node dist/cli/migrate.cli.js

PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
export PORT
# The image's own command, as its last CMD line writes it (exec form, no spaces inside arguments).
read -r -a command <<<"$(grep '^CMD \[' "$dockerfile" | tail -1 | sed 's/^CMD \[//; s/\]$//; s/[",]//g')"
say "runtime: ${command[*]} on port $PORT"
"${command[@]}" &
app_pid=$!
healthcheck="$(grep -o 'fetch(.*)' "$dockerfile" | sed 's/"]$//; s/\\"/"/g')"
for _ in $(seq 1 100); do
  if node -e "$healthcheck" 2>/dev/null; then break; fi
  kill -0 "$app_pid" 2>/dev/null || { echo "verify-build: the app exited at boot" >&2; exit 1; }
  sleep 0.2
done
node -e "$healthcheck"
say "HEALTHCHECK command passes"
kill -TERM "$app_pid"
set +e
wait "$app_pid"
code=$?
set -e
app_pid=""
if [ "$code" -ne 0 ]; then
  echo "verify-build: exit code $code after SIGTERM (expected 0)" >&2
  exit 1
fi
say "SIGTERM: exit code 0"
# pino-pretty is a devDependency: asked for pretty lines (LOG_PRETTY, NODE_ENV=development), the
# production install still boots to its config check and writes JSON.
set +e
pretty="$(LOG_PRETTY=true NODE_ENV=development PORT=x node dist/main.js 2>&1)"
set -e
case "$pretty" in
  *'PORT=\"x\": must be an integer'*) say "LOG_PRETTY without pino-pretty: JSON lines" ;;
  *) fail "LOG_PRETTY without pino-pretty did not reach the config check: $pretty" ;;
esac
say "ok"
