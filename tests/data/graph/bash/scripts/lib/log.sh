log_info() {
  echo "[info] $*"
}

log_warn() {
  echo "[warn] $*" >&2
}
