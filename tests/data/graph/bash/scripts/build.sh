#!/usr/bin/env bash
set -euo pipefail
source "$(dirname "$0")/lib/log.sh"
. ./scripts/env.sh

compile() {
  log_info "compiling in $MODE"
  make all
}

main() {
  compile
  log_warn "done"
}

main "$@"
