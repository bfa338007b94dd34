#!/bin/sh
set -eu
. "$(dirname "$0")/lib.sh"
source ./config.sh

function total {
  local sum=0
  for r in "$@"; do
    sum=$(echo "$sum + $(area "$r")" | bc -l)
  done
  log "total: $sum"
}

main() {
  total 1 2 3
}

main "$@"
