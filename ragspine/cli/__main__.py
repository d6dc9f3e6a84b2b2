"""``python -m ragspine.cli``: the ``ragspine`` command."""

from ragspine.cli.app import main

if __name__ == "__main__":
    raise SystemExit(main())
