#!/bin/sh
# Fails when git tracks a build product: a file whose first bytes are an executable, object
# or library (ELF, PE/COFF "MZ", Mach-O, universal binary, ar archive, LLVM bitcode, Python
# bytecode) or whose name says it is one (.o .obj .a .lib .so .dll .dylib .exe .pyc).
# Build products come from make; .gitignore keeps them out (build/, build-*/).
# Prints a line per offender and a RESULT line for tests/run.sh.
cd "$(dirname "$0")/.." || exit 1
if ! command -v git >/dev/null 2>&1 || ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "SKIP not a git checkout: nothing to check"; echo "RESULT 0 0 1"; exit 0
fi
tmp=$(mktemp) || exit 1; trap 'rm -f "$tmp"' EXIT
git ls-files > "$tmp"
files=0; bad=0
while IFS= read -r f; do
    [ -f "$f" ] || continue                  # deleted in the work tree, or a submodule
    files=$((files + 1))
    magic=$(od -A n -t x1 -N 8 "$f" 2>/dev/null | tr -d ' \n')
    what=""
    case $magic in
        7f454c46*) what="ELF executable/object";;
        4d5a*) what="PE executable or DLL (MZ)";;
        feedface*|feedfacf*|cefaedfe*|cffaedfe*) what="Mach-O binary";;
        cafebabe*) what="universal (fat) binary or class file";;
        213c617263683e0a*) what="ar archive (static library)";;
        4243c0de*|dec0170b*) what="LLVM bitcode";;
        ????0d0a*) case $f in *.pyc) what="Python bytecode";; esac;;
    esac
    case $f in
        *.o|*.obj|*.a|*.lib|*.so|*.so.*|*.dll|*.dylib|*.exe|*.pyc|*.pyd) [ -n "$what" ] || what="named like a build product";;
    esac
    if [ -n "$what" ]; then echo "FAIL tracked build product: $f ($what)"; bad=$((bad + 1)); fi
done < "$tmp"
if [ "$bad" -eq 0 ]; then echo "PASS none of the $files tracked files is a build product"; echo "RESULT 1 0 0"
else echo "RESULT 0 $bad 0"; exit 1; fi
