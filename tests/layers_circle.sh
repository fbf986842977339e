#!/bin/sh
# The layers check must fail on a circle of files: a library of two objects
# that call each other (a.c -> b.c -> a.c), and pass once the circle is cut.
# Usage: layers_circle.sh SRC CC
set -u
src=$1
cc=${2:-cc}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/build/fake"
printf 'int b(int);\nint a(int x) { return x > 0 ? b(x - 1) : 0; }\n' >"$tmp/a.c"
printf 'int a(int);\nint b(int x) { return a(x); }\n' >"$tmp/b.c"
"$cc" -c -o "$tmp/a.c.o" "$tmp/a.c" && "$cc" -c -o "$tmp/b.c.o" "$tmp/b.c" || exit 2
ar rc "$tmp/build/fake/libcomet_fake.a" "$tmp/a.c.o" "$tmp/b.c.o" || exit 2
out=$(sh "$src/scripts/check-layers.sh" "$src" "$tmp/build")
rc=$?
case $out in
*"fake/: a circle of 2 files:"*"a.c -> b.c (b)"*"b.c -> a.c (a)"*) ;;
*)
    echo "layers_circle: the circle a.c <-> b.c was not reported:"
    echo "$out"
    exit 1
    ;;
esac
[ "$rc" -eq 1 ] || { echo "layers_circle: exit $rc on a circle, want 1"; exit 1; }
# cut the circle: b no longer calls a
printf 'int b(int x) { return x; }\n' >"$tmp/b.c"
"$cc" -c -o "$tmp/b.c.o" "$tmp/b.c" || exit 2
rm -f "$tmp/build/fake/libcomet_fake.a"
ar rc "$tmp/build/fake/libcomet_fake.a" "$tmp/a.c.o" "$tmp/b.c.o" || exit 2
sh "$src/scripts/check-layers.sh" "$src" "$tmp/build" >/dev/null || {
    echo "layers_circle: still fails once the circle is cut"
    exit 1
}
echo "layers_circle: a circle fails the check, a chain passes"
