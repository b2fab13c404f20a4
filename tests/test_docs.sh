#!/bin/sh
# The documentation: README.md stays a front page (at most 320 lines), every relative link
# and image in README.md, CHANGELOG.md and docs/*.md points to a file that exists, and the
# pages speak to users about the library (the same words the repository's before-stop hook
# looks for: sessions, issues, branches being merged, "the lead").
# Prints "RESULT passed failed skipped".
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0; skip=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# Pages written beside this one that may not be in every checkout yet: a link to one of these
# that is missing is skipped, not failed. Empty this list once they are all in the tree.
PENDING=""                 # pages linked before they exist (none now)

PAGES="README.md"
[ -f CHANGELOG.md ] && PAGES="$PAGES CHANGELOG.md"
for f in docs/*.md; do [ -f "$f" ] && PAGES="$PAGES $f"; done

lines=$(wc -l < README.md)
if [ "$lines" -le 320 ]; then ok; else bad "README.md has $lines lines (at most 320: move details to docs/)"; fi

# links: markdown [text](target) and ![alt](target), HTML src="..." and href="..."; outside
# fenced code blocks and inline code; web addresses and in-page anchors are not checked
links() {
    awk '
        /^[ \t]*```/ { code = !code; next }
        code { next }
        {
            line = $0
            gsub(/`[^`]*`/, "", line)
            while (match(line, /\]\([^)]*\)/)) {
                t = substr(line, RSTART + 2, RLENGTH - 3); line = substr(line, RSTART + RLENGTH)
                sub(/[ \t].*$/, "", t); print t
            }
            line = $0
            gsub(/`[^`]*`/, "", line)
            while (match(line, /(src|href)="[^"]*"/)) {
                t = substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH)
                sub(/^[a-z]*="/, "", t); sub(/"$/, "", t); print t
            }
        }' "$1"
}
nlinks=0
for page in $PAGES; do
    dir=$(dirname "$page")
    for target in $(links "$page"); do
        case $target in
            http://*|https://*|mailto:*|\#*) continue;;
        esac
        path=${target%%#*}
        [ -n "$path" ] || continue
        nlinks=$((nlinks + 1))
        resolved=$dir/$path
        [ "$dir" = "." ] && resolved=$path
        if [ -e "$resolved" ]; then ok; continue; fi
        norm=$(printf '%s\n' "$resolved" | sed 's#^\./##; s#[^/]*/\.\./##g')
        case " $PENDING " in
            *" $norm "*) skip=$((skip + 1)); echo "SKIP $page links $target: that page is not in this checkout yet";;
            *) bad "$page links $target, which does not exist";;
        esac
    done
done
[ "$nlinks" -gt 20 ] && ok || bad "only $nlinks relative links found: the link scanner is broken"

# no tracker talk
for page in $PAGES; do
    talk=$(grep -n -i -E "\b(session [0-9]|the lead|this issue|the issue|issue [0-9]|when it lands|until .* is merged|branch is merged|seed [0-9]{3})" "$page")
    if [ -z "$talk" ]; then ok
    else bad "$page speaks of the work instead of the library:"; printf '%s\n' "$talk" | head -5 | sed 's/^/    /'; fi
done

echo "docs: $(echo $PAGES | wc -w) pages, $nlinks relative links, README.md $lines lines"
echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
