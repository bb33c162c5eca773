#!/usr/bin/env bash
# System packages a make target needs, installed when missing (called by `make eval`, `make test`,
# `make view` and `make setup-system`; the venv has its own stamp, this is the check for the rest).
#
#   bash scripts/system_deps.sh eval|test|view|all [--dry-run]
#
# Each tool is looked up on PATH (a few milliseconds, so it runs every time). When all are there
# it prints nothing. When some are missing: as root with apt-get, it installs their Debian packages
# (apt-get update once, then install); otherwise it prints the exact command to run and exits 1.
# --dry-run prints what it would install and exits 0. SKIP_SYSTEM_DEPS=1 skips the check (tools
# installed under other names or paths; tests that need them will then say what is missing).
#   bubblewrap (bwrap)          the sandbox's OS isolation        eval, test
#   graphviz (dot)              the viewer's state-graph layouts   view, test
#   chromium, chromium-driver   the viewer's browser tests         test
set -euo pipefail

target="${1:-}"
dry_run=0
[[ "${2:-}" == "--dry-run" ]] && dry_run=1
[[ "${SKIP_SYSTEM_DEPS:-0}" == "1" ]] && exit 0

case "$target" in
  eval) tools=(bwrap) ;;
  view) tools=(dot) ;;
  test | all) tools=(bwrap dot chromium chromedriver) ;;
  *) echo "usage: bash scripts/system_deps.sh eval|test|view|all [--dry-run]" >&2; exit 2 ;;
esac

package_of() {
  case "$1" in
    bwrap) echo bubblewrap ;;
    dot) echo graphviz ;;
    chromium) echo chromium ;;
    chromedriver) echo chromium-driver ;;
  esac
}

found() {  # chromium goes by several names
  if [[ "$1" == chromium ]]; then
    command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
      || command -v google-chrome >/dev/null 2>&1
  else
    command -v "$1" >/dev/null 2>&1
  fi
}

missing_tools=()
packages=()
for tool in "${tools[@]}"; do
  if ! found "$tool"; then
    missing_tools+=("$tool")
    packages+=("$(package_of "$tool")")
  fi
done
[[ ${#packages[@]} -eq 0 ]] && exit 0

command="apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ${packages[*]}"
if [[ $dry_run -eq 1 ]]; then
  echo "make $target needs ${missing_tools[*]}; would run: $command"
  exit 0
fi
if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "make $target needs ${missing_tools[*]}, which are not installed." >&2
  echo "Install them (Debian/Ubuntu packages: ${packages[*]}), e.g.:" >&2
  echo "    sudo apt-get update && sudo apt-get install -y ${packages[*]}" >&2
  echo "then run make $target again (run as root, make installs them itself)." >&2
  exit 1
fi
echo "== installing system packages for make $target: ${packages[*]}"
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"
for tool in "${missing_tools[@]}"; do
  if ! found "$tool"; then
    echo "installed ${packages[*]}, but $tool is still not on PATH; install it by hand and rerun make $target" >&2
    exit 1
  fi
done
