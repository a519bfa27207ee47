"""`python -m cudafrag ARGS` and the `cudafrag` script of a pip install: the
command itself, with the arguments as given (`cudafrag --help`)."""
import os
import sys


def main():
    from . import command

    try:
        exe = command()
    except FileNotFoundError as e:
        sys.stderr.write(f"cudafrag: {e}\n")
        return 127
    os.execv(exe, [exe] + sys.argv[1:])
    return 127  # not reached: execv replaced this process


if __name__ == "__main__":
    sys.exit(main())
