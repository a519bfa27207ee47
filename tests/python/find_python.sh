# find_python VERSION: the path of CPython VERSION (3.10 ... 3.13: python3.X on
# PATH or under pyenv; "system": /usr/bin/python3), nothing when not installed.
# Sourced by the suite's scripts.
find_python() {
    if [ "$1" = system ]; then
        [ -x /usr/bin/python3 ] && echo /usr/bin/python3
        return
    fi
    for c in "python$1" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/"python$1"; do
        p=$(command -v "$c" 2>/dev/null) || continue
        "$p" -c "import ctypes, sys; sys.exit(sys.version[:len('$1')] != '$1')" 2>/dev/null &&
            { echo "$p"; return; }
    done
}
