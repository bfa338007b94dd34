"""Git hooks: the scripts `git edda init` installs and the work they hand to a background worker."""
