#!/usr/bin/env bash
# Fails when a tracked file is larger than 1 MB: build outputs (a 101 MB
# binary once) and data dumps do not belong in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
big=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	size=$(stat -c %s "$f")
	if [ "$size" -gt "$limit" ]; then
		echo "tracked file $f is $size bytes (limit $limit)" >&2
		big=1
	fi
done < <(git ls-files -z)
exit "$big"
