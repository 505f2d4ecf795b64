#!/bin/sh
# Copies the chart library the console vendors from node_modules (installed
# by `npm ci` at the version package-lock.json pins) into ../assets/vendor,
# where the console embeds it: the console never fetches it at run time.
# Run after changing the pinned version, and commit the copies; a Go test
# (TestVendoredUplot) checks they equal node_modules' when it is present.
set -eu
cd "$(dirname "$0")"
[ -d node_modules/uplot ] || npm ci --no-audit --no-fund
dst=../assets/vendor/uplot
mkdir -p "$dst"
for f in dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE; do
	cp "node_modules/uplot/$f" "$dst/$(basename "$f")"
done
echo "vendored uplot $(node -p 'require("./node_modules/uplot/package.json").version') into $dst"
