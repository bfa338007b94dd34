export MODE=release
