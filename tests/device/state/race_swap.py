"""Count what a path swap does to a running device: the state directory renamed away and a
prepared substitute put in its place, and back, ``--swaps`` times while it installs and releases.

    python tests/device/state/race_swap.py --swaps 1000
    python tests/device/state/race_swap.py --swaps 1000 --bind      # a bind mount over the path (root)

Runs test_device_state_swap.py's race once and prints its counts: operations refused, files
written and deleted in the substitute, swaps after which its secret changed or it was touched,
whether the device's versions only went up and whether the real directory kept its last
version and its secret.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile

_HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE), str(_HERE.parent)]  # the state tests it runs, the device harness

from harness import Sim  # noqa: E402
from test_device_state_swap import can_bind_mount, swap_race  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--swaps", type=int, default=1000)
    parser.add_argument("--pause", type=float, default=0.002, help="seconds each directory stays in place")
    parser.add_argument("--bind", action="store_true", help="bind-mount the substitute over the path (root)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as parent:
        if args.bind and not can_bind_mount(pathlib.Path(parent)):
            sys.exit("--bind: this process cannot bind-mount (root with CAP_SYS_ADMIN needed)")
        counts = swap_race(Sim(), pathlib.Path(parent), args.swaps, args.pause, bind=args.bind)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
