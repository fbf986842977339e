#!/bin/sh
# The report renders in a real browser: builds the report of the fixture
# results with `comet report`, opens index.html in headless Chromium with a
# check appended to a copy of the page (after load, every figure must hold
# an image that decoded with a non-zero size, or say why it was not drawn),
# reads the verdict from the dumped DOM, and takes a 1280 px wide
# screenshot that must be a non-trivial PNG.
#   browser_check.sh COMET FIXTURE_DIR [SHOT_DIR]
# Exit 0 pass, 1 fail, 77 skip (no Chromium: scripts/setup.sh installs it).
set -u
comet=$1
fixture=$2
shots=${3:-}
browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
    echo "browser_check: no Chromium installed (Debian package chromium): skipped"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/comet-browser.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
cp -r "$fixture" "$work/run" || exit 1
"$comet" report --from "$work/run" --foreign-ok -q >"$work/report.log" 2>&1 || {
    echo "browser_check: comet report failed:"; cat "$work/report.log"; exit 1; }
page="$work/run/report/index.html"
[ -s "$page" ] || { echo "browser_check: no index.html"; exit 1; }
check="$work/run/report/check.html"
cat "$page" >"$check"
cat >>"$check" <<'JS'
<script>
window.addEventListener('load', function () {
  var figs = document.querySelectorAll('figure'), bad = [], imgs = 0;
  figs.forEach(function (f) {
    var img = f.querySelector('img'), note = f.querySelector('p.note');
    if (img) {
      imgs++;
      if (!img.complete || img.naturalWidth < 100 || img.naturalHeight < 100)
        bad.push(img.getAttribute('src') + ' (' + img.naturalWidth + 'x' + img.naturalHeight + ')');
      if (img.getBoundingClientRect().width > document.documentElement.clientWidth + 1)
        bad.push(img.getAttribute('src') + ' wider than the page');
    } else if (!note) {
      bad.push('figure ' + (f.id || '?') + ' has neither image nor reason');
    }
    if (!f.querySelector('figcaption')) bad.push('figure ' + (f.id || '?') + ' without caption');
  });
  var out = document.createElement('pre');
  out.id = 'comet-verdict';
  out.textContent = 'COMET-VERDICT figures=' + figs.length + ' images=' + imgs +
    ' bad=' + bad.length + (bad.length ? ' :: ' + bad.join(' ; ') : '');
  document.body.appendChild(out);
});
</script>
JS
flags="--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
--disable-background-networking --disable-component-update --disable-sync
--user-data-dir=$work/profile --window-size=1280,2000 --virtual-time-budget=15000"
# shellcheck disable=SC2086
timeout 120 "$browser" $flags --dump-dom "file://$check" >"$work/dom.html" 2>"$work/chromium.log"
verdict=$(grep -o 'COMET-VERDICT figures=[0-9][^<]*' "$work/dom.html" | head -n 1)
if [ -z "$verdict" ]; then
    echo "browser_check: the page did not finish loading in Chromium"
    tail -n 5 "$work/chromium.log"
    exit 1
fi
echo "browser_check: $verdict"
figures=$(echo "$verdict" | sed 's/.*figures=\([0-9]*\).*/\1/')
images=$(echo "$verdict" | sed 's/.*images=\([0-9]*\).*/\1/')
nbad=$(echo "$verdict" | sed 's/.*bad=\([0-9]*\).*/\1/')
[ "$figures" -gt 0 ] && [ "$images" -gt 0 ] && [ "$nbad" -eq 0 ] || exit 1
# a screenshot at 1280 px: must be a PNG of some size (an empty page is ~10 kB)
# shellcheck disable=SC2086
timeout 120 "$browser" $flags --screenshot="$work/page.png" "file://$page" >/dev/null 2>&1
size=$(wc -c <"$work/page.png" 2>/dev/null || echo 0)
magic=$(head -c 4 "$work/page.png" 2>/dev/null | od -An -c | tr -d ' ')
if [ "$magic" != "211PNG" ] || [ "$size" -lt 30000 ]; then
    echo "browser_check: screenshot missing or blank ($size bytes)"
    exit 1
fi
echo "browser_check: screenshot 1280 px wide, $size bytes"
if [ -n "$shots" ]; then
    mkdir -p "$shots" && cp "$work/page.png" "$shots/report-1280.png"
fi
exit 0
