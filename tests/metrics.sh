#!/bin/sh
# metrics.sh - the code's shape stays as the structure issue left it
# (tools/metrics.py --check): no function in src/, alloc/, api/, arch/ or
# LD_PRELOAD/ over 60 lines, no reference from a file to a higher layer
# (src arch | alloc | api | LD_PRELOAD), no circle of references across
# directories.  Skipped (77) without python3.
command -v python3 >/dev/null 2>&1 || exit 77
top=${top_srcdir:-$(dirname "$0")/..}
python3 "$top/tools/metrics.py" --root "$top" --check --max-lines 60 || {
	echo "metrics: see above (a function over 60 lines, an upward reference or a circle across directories)" >&2
	exit 1
}
