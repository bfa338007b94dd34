#!/usr/bin/env bash
# Helpers shared by the scripts.

# Logs a message to stderr.
log() {
  echo "[$(date +%T)] $*" >&2
}

# Computes the area of a circle of radius $1.
area() {
  local r=$1
  echo "3.14159 * $r * $r" | bc -l
}
