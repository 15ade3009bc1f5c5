"""``privmap sanitize --state``: peak memory flat in the number of rows, bounded per line.

Two measurements, each a separate ``privmap`` process whose peak RSS is read from ``wait4``:

1. rows: the same command on IN.csv files of ``--rows`` rows each (default 10^4 and 10^6; real
   SSI-2012 rows cycled, every 50th made invalid so that refusals are counted and written to
   --rejects as well), reporting seconds, peak RSS and the ratio of each peak to the first's;
2. line: 10^4 rows with one ``--line-mb`` MB line of short cells (default 200) in the middle, run under an
   address-space limit of ``--as-limit-gb`` GB (default 1.2, ``RLIMIT_AS``): the long line must be
   one refused row and every other row released.

    python benchmarks/bench_sanitize_stream.py [--rows 10000 1000000] [--line-mb 200] [--as-limit-gb 1.2]
    python benchmarks/bench_sanitize_stream.py --bundle B --trusted PUB --data CSV --rows 10000 200000 --line-mb 0

Uses the example bundle tables/ssi2012-gender-k64.bundle and its key, or any bundle (a
recommender's or a ranking's: every kind) with the rows of ``--data`` cycled. Writes only under a
temporary folder, removed at the end.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "tables" / "ssi2012-gender-k64.bundle"
PUBLIC = ROOT / "tables" / "public.pem"
DATA = ROOT / "data" / "ssi2012" / "tastes_gender.csv"
PRIVMAP = pathlib.Path(sys.executable).with_name("privmap")


def write_input(path: pathlib.Path, rows: int, long_line: int = 0, data: pathlib.Path = DATA) -> None:
    """``rows`` data rows of ``data`` cycled (every 50th invalid), and with ``long_line`` one line
    of that many bytes in the middle."""
    with data.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        source = [row for row in reader]
    with path.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        for i, row in enumerate(itertools.islice(itertools.cycle(source), rows)):
            if long_line and i == rows // 2:  # short cells: a reader holding the line holds 10^8 strings
                chunk = "2," * (1 << 19)
                for _ in range(long_line >> 20):
                    f.write(chunk)
                f.write("2" * (long_line % (1 << 20)) + "\n")
            writer.writerow(["x"] + row[1:] if i % 50 == 7 else row)


def run(args, as_limit: int | None = None) -> tuple[int, float, float, str]:
    """Exit status, seconds, peak RSS (MiB) and stderr of ``privmap ARGS``."""
    def limit():
        if as_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))
    started = time.perf_counter()
    proc = subprocess.Popen([str(PRIVMAP), *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=limit, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    return os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss / 1024, err.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--line-mb", type=int, default=200, help="0: no long-line run")
    parser.add_argument("--as-limit-gb", type=float, default=1.2)
    parser.add_argument("--bundle", type=pathlib.Path, default=BUNDLE)
    parser.add_argument("--trusted", type=pathlib.Path, default=PUBLIC, help="the bundle's public key")
    parser.add_argument("--data", type=pathlib.Path, default=DATA, help="rows cycled into IN.csv")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        print(f"{'rows':>9} {'refused':>8} {'seconds':>8} {'us/row':>7} {'peak MiB':>9} {'vs first':>9}")
        first = None
        for rows in args.rows:
            infile = tmp / f"in{rows}.csv"
            write_input(infile, rows, data=args.data)
            state = tmp / f"device{rows}"
            code, seconds, peak, err = run(["sanitize", args.bundle, "--trusted", args.trusted, infile, tmp / "out.csv",
                                            "--state", state, "--rejects", tmp / "rejects.csv", "--skip-invalid"])
            if code != 0:
                sys.exit(f"sanitize of {rows} rows failed ({code}): {err}")
            refused = sum(1 for _ in (tmp / "rejects.csv").open()) - 1
            released = sum(1 for _ in (tmp / "out.csv").open()) - 1
            assert released + refused == rows, (released, refused, rows)
            first = first or peak
            print(f"{rows:>9} {refused:>8} {seconds:>8.1f} {1e6 * seconds / rows:>7.1f} {peak:>9.1f} "
                  f"{peak / first:>9.3f}")
            infile.unlink()
        if not args.line_mb:
            return
        rows = 10_000
        infile = tmp / "long.csv"
        write_input(infile, rows, long_line=args.line_mb * 1000 * 1000, data=args.data)
        limit = int(args.as_limit_gb * 1000 ** 3)
        code, seconds, peak, err = run(["sanitize", args.bundle, "--trusted", args.trusted, infile, tmp / "out.csv",
                                        "--state", tmp / "device-long", "--rejects", tmp / "rejects.csv",
                                        "--skip-invalid"], as_limit=limit)
        if code != 0:
            sys.exit(f"sanitize with a {args.line_mb} MB line under RLIMIT_AS {args.as_limit_gb} GB failed "
                     f"({code}): {err}")
        reasons = [r[1] for r in list(csv.reader((tmp / "rejects.csv").open()))[1:]]
        long_refused = [r for r in reasons if r.startswith("line longer")]
        released = sum(1 for _ in (tmp / "out.csv").open()) - 1
        print(f"one {args.line_mb} MB line under RLIMIT_AS {args.as_limit_gb} GB: exit {code}, {seconds:.1f} s, "
              f"peak {peak:.1f} MiB; refused {len(reasons)} ({len(long_refused)} for the long line), "
              f"released {released} of {rows} rows")


if __name__ == "__main__":
    main()
