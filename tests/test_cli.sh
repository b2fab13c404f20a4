#!/bin/sh
# The examples and the command-line simulator: every example was built (or skipped with a
# notice for a missing libpng/GLFW), `nbody` runs each scenario for a few steps, refuses bad
# arguments with exit status 2 (never a crash), and --resume ends in a final state bitwise
# equal to the run straight through: from a snapshot for fixed-step methods, from a
# checkpoint for adaptive and multistep runs too. Prints "RESULT passed failed skipped".
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
BUILD=${BUILD:-build}
NB="$BUILD/nbody"
pass=0; fail=0; skip=0
check() { # description, then a command that must succeed
    what=$1; shift
    if "$@" >/dev/null 2>&1; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $what"; fi
}
tmp=$(mktemp -d); trap 'umount "$tmp/full" 2>/dev/null; rm -rf "$tmp"' EXIT

# every example builds (the Makefile leaves out those whose library is missing, with a notice)
for src in examples/*.c; do
    name=$(basename "$src" .c)
    case $name in
        viewer) needs="glfw3 gl";;
        galaxy_collision|central_body|three_body) needs=libpng;;   # as EXAMPLES_NEED_PNG in the Makefile
        *) needs="";;
    esac
    if [ -x "$BUILD/$name" ]; then pass=$((pass + 1))
    elif [ -n "$needs" ] && ! pkg-config --exists $needs 2>/dev/null; then
        skip=$((skip + 1)); echo "SKIP example $name: its library is not installed"
    else fail=$((fail + 1)); echo "FAIL example $name was not built"; fi
done
[ -x "$NB" ] || { echo "FAIL $NB missing"; echo "RESULT $pass $((fail + 1)) $skip"; exit 1; }

# each scenario a few steps
for sc in cube plummer galaxy galaxy10 collision figure8 pythagorean; do
    case $sc in figure8|pythagorean) n="";; *) n="--n 64";; esac
    check "scenario $sc runs" sh -c "$NB --scenario $sc $n --dt 1e-3 --t-end 5e-3 | grep -q '^done: t = 0.005, 5 steps'"
done
check "--list names the CPU engines and leapfrog" sh -c "$NB --list | grep -q 'engines:.*block' && $NB --list | grep -q 'methods:.*leapfrog'"
check "--help exits 0" "$NB" --help

# bad arguments: a clear message on stderr and exit status 2, never a crash
printf 'NBODYSNP garbage' > "$tmp/garbage.snap"
while IFS= read -r args; do
    eval "set -- $args"
    "$NB" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" -eq 2 ] && [ -s "$tmp/err" ]; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL nbody $args: exit $rc (want 2), stderr: $(head -c 200 "$tmp/err")"; fi
done <<ARGS
--n 0
--n -5
--n abc
--n 12x
--n 99999999999999999999999
--dt 0
--dt -1
--dt nan
--dt 1e400
--t-end inf
--t-end -1
--tolerance -1e-6
--theta x
--snapshot-every 0
--png-every -1
--seed -1
--scenario nope
--engine nope
--method nope
--bogus
positional
--dt
--scenario
--scenario figure8 --n 5
--scenario collision --n 1
--resume $tmp/does-not-exist.snap
--resume $tmp/garbage.snap
--scenario plummer --n 32 --t-end 0.01 --out $tmp/no/such/dir/x --snapshot-every 0.005 --resume $tmp/garbage.snap
ARGS

# an engine this build does not have (whichever that is) is refused the same way
missing=""
for e in cuda cuda-tree opencl opencl-tree; do
    "$NB" --list | grep '^engines:' | grep -qw -- "$e" || { missing=$e; break; }
done
if [ -n "$missing" ]; then
    "$NB" --engine "$missing" --t-end 0.01 >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" -eq 2 ] && [ -s "$tmp/err" ]; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL nbody --engine $missing (not in this build): exit $rc (want 2)"; fi
fi

# --resume: the run from a snapshot ends bitwise where the run straight through ends.
# dt 0.003 does not divide the snapshot interval, so the pieces end on clipped steps too.
for m in "leapfrog 0.001" "leapfrog 0.003" "rk4 0.002" "euler 0.001" "midpoint 0.001"; do
    set -- $m
    opts="--scenario plummer --n 128 --seed 5 --method $1 --dt $2 --t-end 0.1 --snapshot-every 0.025"
    "$NB" $opts --out "$tmp/a" >/dev/null 2>&1
    "$NB" $opts --out "$tmp/b" --resume "$tmp/a_snap_000002.snap" >/dev/null 2>&1
    check "--resume $1 dt $2: final state bitwise equal to the straight run" cmp "$tmp/a_final.snap" "$tmp/b_final.snap"
    check "--resume $1 dt $2: later snapshots equal too" cmp "$tmp/a_snap_000003.snap" "$tmp/b_snap_000003.snap"
    check "--resume $1 dt $2: the state did move" sh -c "! cmp -s $tmp/a_snap_000002.snap $tmp/a_final.snap"
done

# --resume from a checkpoint (OUT_snap_K.ckpt, written beside each snapshot): bitwise exact
# for adaptive and multistep runs too, whose snapshots lack the next step size and the past
# derivatives. dt 1e-4 / tolerance: the steps grow and get rejected, well inside the 1% pieces.
for m in "rkdp --tolerance 1e-10 --dt 1e-4" "rkf --tolerance 1e-12 --dt 1e-4" "adams --dt 0.001"; do
    set -- $m
    opts="--scenario plummer --n 64 --seed 5 --method $m --t-end 0.4 --snapshot-every 0.1"
    rm -f "$tmp"/a_* "$tmp"/b_* "$tmp"/c_*
    "$NB" $opts --out "$tmp/a" >/dev/null 2>&1
    "$NB" $opts --out "$tmp/b" --resume "$tmp/a_snap_000002.ckpt" >"$tmp/b.log" 2>&1
    "$NB" $opts --out "$tmp/c" --resume "$tmp/a_snap_000002.snap" >/dev/null 2>&1
    check "--resume checkpoint $1: says it resumes exactly" grep -q 'from the checkpoint (exact)' "$tmp/b.log"
    check "--resume checkpoint $1: final state bitwise equal to the straight run" cmp "$tmp/a_final.snap" "$tmp/b_final.snap"
    check "--resume checkpoint $1: final checkpoints equal (step counts, next step, history)" cmp "$tmp/a_final.ckpt" "$tmp/b_final.ckpt"
    check "--resume checkpoint $1: the state did move" sh -c "! cmp -s $tmp/a_snap_000002.snap $tmp/a_final.snap"
    # what the checkpoint adds: from the bodies alone the method restarts, and the bits differ
    check "--resume snapshot $1: not bitwise (the checkpoint is needed)" sh -c "! cmp -s $tmp/a_final.snap $tmp/c_final.snap"
done
# a checkpoint refuses other numerics or another body count: exit 2 with a message
for args in "--method rkdp --tolerance 1e-10 --dt 2e-4" "--method rk4 --dt 1e-4" "--method adams --dt 0.001 --n 65"; do
    "$NB" --scenario plummer --n 64 --seed 5 --t-end 0.4 $args --out "$tmp/d" --resume "$tmp/a_snap_000002.ckpt" \
        >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" -eq 2 ] && [ -s "$tmp/err" ]; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL nbody $args --resume (an adams checkpoint): exit $rc (want 2)"; fi
done

# CSV: a header, a column line and one line a body
"$NB" --scenario figure8 --t-end 0.01 --csv --out "$tmp/f" >/dev/null 2>&1
check "--csv writes the final state, 3 bodies" sh -c "[ \$(wc -l < $tmp/f_final.csv) -eq 5 ]"
# pictures, when this nbody has libpng
if "$NB" --list | grep -q 'pictures: png'; then
    check "--png-every writes frames 0..2" sh -c "$NB --scenario galaxy --n 200 --dt 1e-3 --t-end 0.004 --png-every 0.002 --out $tmp/p && [ -s $tmp/p_frame_000000.png ] && [ -s $tmp/p_frame_000002.png ]"
else skip=$((skip + 1)); echo "SKIP --png-every: nbody built without libpng"; fi

# the small examples run
check "hello runs and conserves energy to 1e-5" sh -c "$BUILD/hello | awk '{ d = \$NF; if (d < 0) d = -d; exit !(d < 1e-5) }'"
check "demo runs (200 bodies to t = 0.5)" sh -c "cd $tmp && $ROOT/$BUILD/demo 200 0.5 | grep -q 'dE/E'"
for ex in galaxy_collision central_body; do
    if [ -x "$BUILD/$ex" ]; then
        check "$ex writes frames 0..2 (100 bodies to t = 0.1)" sh -c "$BUILD/$ex 100 0.1 $tmp/$ex && [ -s $tmp/$ex/frame_000000.png ] && [ -s $tmp/$ex/frame_000002.png ]"
    fi
done
[ -x "$BUILD/three_body" ] && check "three_body writes its picture" sh -c "$BUILD/three_body $tmp/tb.png && [ -s $tmp/tb.png ]"

# ---- options: --opt=value, --version, validation against each other, folders, resume conflicts
check "--opt=value form: --t-end=0.005 --dt=1e-3" sh -c "$NB --scenario=figure8 --t-end=0.005 --dt=1e-3 | grep -q '^done: t = 0.005, 5 steps'"
check "--version names the library version" sh -c "$NB --version | grep -q '^nbody [0-9][0-9.]* (nbody.h)'"
check "--threads, --order: adams order 3 on 1 thread runs" sh -c "$NB --scenario figure8 --method adams --order 3 --threads 1 --dt 1e-3 --t-end 0.005 | grep -q '1 thread'"
check "the banner names the engine and where it runs" sh -c "$NB --scenario figure8 --t-end 0.001 | grep -q 'engine block (CPU, '"
touch "$tmp/afile"
while IFS='|' read -r args want; do
    eval "set -- $args"
    "$NB" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" -eq 2 ] && grep -q -e "$want" "$tmp/err" && ! grep -q '^done' "$tmp/out"; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL nbody $args: exit $rc (want 2 and '$want'), stderr: $(head -c 300 "$tmp/err")"; fi
done <<ARGS
--engine tree --theta 2 --t-end 0.01|desc.theta = 2 must be at most 1.2
--engine tree --theta 0 --t-end 0.01|--theta 0: the library reads 0 as its default
--engine tree --theta=1.3 --t-end 0.01|desc.theta = 1.3 must be at most 1.2
--theta 0.5 --t-end 0.01|applies to the tree engines
--method leapfrog --tolerance 1e-8|needs an adaptive method
--tolerance 1e-8|needs an adaptive method
--order 3|order of --method adams
--method adams --order 6|--order '6': want a whole number from 1 to 5
--device 1|--device
--threads 0|--threads '0': want a whole number from 1 to 1000000
--csv=1|takes no value
--dt=abc|--dt 'abc': want a finite number > 0
--scenario|--scenario needs a value
--method rkdp --tolerance 1e-300|--tolerance 1e-300 refused
--method rkdp --tolerance 1e-300|desc.tolerance = 1e-300 is below what NBODY_REAL
--threads 100000|desc.threads = 100000 is out of range
--snapshot-every 1e-300 --out $tmp/i|--snapshot-every 1e-300 refused
--png-every 1e-9 --out $tmp/i|--png-every = 1e-09 would write 6e+09 outputs
--archive $tmp/i.arc --archive-every 1e-12|--archive-every = 1e-12 would write
--video $tmp/i.mp4 --video-every 1e-12|--video-every = 1e-12 would write\|--video: ffmpeg is not installed
--scenario --n 5|--scenario needs a value
--archive-every 0.1|--archive-every needs --archive FILE
--devices 2|--devices is the GPU count of the cuda and opencl engines, not of block
--dt 1e-300 --t-end 0.01|--dt 1e-300 with --t-end 0.01: .*no longer moves t
--t-end 1e300|--dt 0.002 with --t-end 1e+300: .*no longer moves t
--video-every 0.1|needs --video
--video x --t-end 0.01|--video x: the file name must end in .mp4, .mov or .mkv
--out $tmp/afile/x --csv --t-end 1000|cannot write the outputs
--out $tmp/afile/sub/x --snapshot-every 1 --t-end 1000|cannot create the folder
--video $tmp/afile/v.mp4 --t-end 1000|cannot write the video\|--video: ffmpeg is not installed
ARGS
check "--out creates its folders (mkdir -p)" sh -c "$NB --scenario figure8 --t-end 0.01 --csv --out $tmp/new/deeper/f && [ -s $tmp/new/deeper/f_final.csv ]"
"$NB" --scenario figure8 --t-end 0.01 --snapshot-every 0.005 --out "$tmp/f8" >/dev/null 2>&1
"$NB" --scenario plummer --n 3 --t-end 0.02 --resume "$tmp/f8_final.snap" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "resume a figure8 snapshot as plummer --n 3: refused, naming --scenario" sh -c "[ $rc -eq 2 ] && grep -q -- '--scenario' $tmp/err"
"$NB" --scenario figure8 --t-end 0.02 --dt 2e-3 --resume "$tmp/f8_final.ckpt" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "resume a checkpoint with another --dt: refused, naming --dt and both values" sh -c "[ $rc -eq 2 ] && grep -q -- 'written with --dt 0.001, this run has --dt 0.002' $tmp/err"
"$NB" --scenario figure8 --t-end 0.02 --method rk4 --resume "$tmp/f8_final.ckpt" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "resume a checkpoint with another --method: refused, naming --method" sh -c "[ $rc -eq 2 ] && grep -q -- 'written with --method leapfrog, this run has --method rk4' $tmp/err"

# an archive record past the end: the index and the count, not an I/O error
"$NB" --scenario figure8 --t-end 0.02 --archive "$tmp/a3.arc" --archive-every 0.01 >/dev/null 2>&1
"$NB" --scenario figure8 --t-end 0.04 --resume "$tmp/a3.arc:99" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--resume a.arc:99: exit 2, index 99 out of range, the archive holds 3 records ($(head -n 1 "$tmp/err"))" \
    sh -c "[ $rc -eq 2 ] && grep -q 'index 99 out of range (the archive holds 3 records' $tmp/err"
check "--resume a.arc:2 (the last record) runs on" sh -c "$NB --scenario figure8 --t-end 0.04 --resume $tmp/a3.arc:2 | grep -q '^done: t = 0.04'"
# every refusal of an option is one line on stderr naming the option and its value
for args in "--n abc" "--scenario" "--dt 1e-300 --t-end 0.01" "--archive-every 0.1" "--tolerance=-1"; do
    opt=${args%% *}; opt=${opt%%=*}
    "$NB" $args >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "nbody $args: exit 2, one line on stderr naming $opt ($(head -n 1 "$tmp/err"))" \
        sh -c "[ $rc -eq 2 ] && [ \$(wc -l < $tmp/err) -eq 1 ] && grep -q -- '^nbody: $opt' $tmp/err"
done
# a refusal by the library (nbody_desc_check, nbody_interval_check): the option and its value,
# then the library's own line with the reason
for args in "--method rkdp --tolerance 1e-300|--tolerance 1e-300|nbody: desc.tolerance = 1e-300" \
            "--png-every 1e-9|--png-every 1e-09|nbody: --png-every = 1e-09" "--engine tree --theta 1e6|--theta 1e+06|nbody: desc.theta = 1e+06"; do
    a=${args%%|*}; rest=${args#*|}; first=${rest%%|*}; second=${rest#*|}
    "$NB" $a --t-end 0.01 --out "$tmp/lr" >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "nbody $a: exit 2, '$first refused' then the library's line ($(tail -n 1 "$tmp/err" | head -c 80))" \
        sh -c "[ $rc -eq 2 ] && [ \$(wc -l < $tmp/err) -eq 2 ] && head -n 1 $tmp/err | grep -q -- '^nbody: $first refused' && tail -n 1 $tmp/err | grep -q -- '^$second'"
done

# ---- write failures: a file is written beside its name and renamed when whole, so a failed
# write leaves no truncated file and the older file of that name as it was. Files are kept
# from growing past 8 blocks (ulimit -f: EFBIG, SIGXFSZ ignored; works without privileges),
# then the disk is really full (a 256 KiB tmpfs, where mount works: root).
limited() { (trap '' XFSZ; ulimit -f 8; exec "$@"); }
mkdir -p "$tmp/wf"
small="--scenario plummer --n 8 --dt 1e-3 --t-end 0.002 --size 16 --out $tmp/wf/o"
big="--scenario plummer --n 4000 --dt 1e-4 --t-end 0.0002 --size 2048 --out $tmp/wf/o"
for what in "--snapshot-every 0.001|o_final.snap" "--csv|o_final.csv" "--png-every 0.001|o_frame_000000.png"; do
    opt=${what%%|*}; file=${what#*|}
    [ "$opt" = "--png-every 0.001" ] && ! "$NB" --list | grep -q 'pictures: png' && { skip=$((skip + 1)); echo "SKIP write failure of $file: no libpng"; continue; }
    rm -f "$tmp"/wf/*
    "$NB" $small $opt >/dev/null 2>&1 && cp "$tmp/wf/$file" "$tmp/$file.good"
    limited "$NB" $big $opt >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "write failure of $file (ulimit -f): exit 1 with the reason ($(grep -m1 'cannot write' "$tmp/err"))" \
        sh -c "[ $rc -eq 1 ] && grep -q 'cannot write .*: File too large' $tmp/err"
    check "write failure of $file (ulimit -f): the older file is intact" cmp "$tmp/wf/$file" "$tmp/$file.good"
    check "write failure of $file (ulimit -f): no partial file left" sh -c "! ls $tmp/wf | grep -q tmp"
done
mkdir -p "$tmp/full"
if mount -t tmpfs -o size=256k nbody-test "$tmp/full" 2>/dev/null; then
    "$NB" --scenario plummer --n 8 --dt 1e-3 --t-end 0.002 --snapshot-every 0.001 --csv --out "$tmp/full/o" >/dev/null 2>&1
    cp "$tmp/full/o_final.snap" "$tmp/final.good"
    dd if=/dev/zero of="$tmp/full/filler" bs=4k 2>/dev/null     # until the disk is full
    "$NB" --scenario plummer --n 8 --dt 1e-3 --t-end 0.002 --snapshot-every 0.001 --csv --out "$tmp/full/o" --seed 2 \
        >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "full disk (tmpfs): exit 1, 'No space left on device' ($(grep -m1 'cannot write' "$tmp/err"))" \
        sh -c "[ $rc -eq 1 ] && grep -q 'No space left on device' $tmp/err"
    check "full disk (tmpfs): the older snapshot is intact" cmp "$tmp/full/o_final.snap" "$tmp/final.good"
    check "full disk (tmpfs): no partial file left" sh -c "! ls $tmp/full | grep -q tmp"
    umount "$tmp/full"
else skip=$((skip + 1)); echo "SKIP full disk on a small tmpfs: mount is not allowed here (the ulimit -f checks above ran)"; fi

# ---- progress: piped output has no carriage return (a log stays one line per report)
"$NB" --scenario plummer --n 512 --dt 1e-3 --t-end 0.3 >"$tmp/piped" 2>&1
check "piped progress has no carriage returns" sh -c "! grep -q \"\$(printf '\r')\" $tmp/piped && grep -q '^done' $tmp/piped"
for ex in galaxy_collision central_body; do
    [ -x "$BUILD/$ex" ] && check "$ex piped: no carriage returns" sh -c "$BUILD/$ex 100 0.1 $tmp/$ex.2 > $tmp/$ex.log && ! grep -q \"\$(printf '\r')\" $tmp/$ex.log"
done

# ---- Ctrl-C: a checkpoint at the last step, exit 130, and --resume continues bitwise
opts="--scenario plummer --n 1024 --seed 3 --dt 1e-3"
"$NB" $opts --t-end 100000 --out "$tmp/int" >"$tmp/int.out" 2>"$tmp/int.err" &
pid=$!
k=0; while [ $k -lt 60 ] && ! grep -q '^nbody ' "$tmp/int.out"; do sleep 0.5; k=$((k + 1)); done   # the banner: running
sleep 1
kill -INT $pid 2>/dev/null
k=0; while [ $k -lt 60 ] && kill -0 $pid 2>/dev/null; do sleep 0.5; k=$((k + 1)); done
kill -0 $pid 2>/dev/null && { echo "FAIL Ctrl-C: nbody still runs 30 s after SIGINT"; kill -9 $pid; }
wait $pid; rc=$?
t_int=$(sed -n 's/.*interrupted at t = \([0-9.e+-]*\);.*/\1/p' "$tmp/int.err")
check "Ctrl-C: exit 130 and OUT_interrupted.ckpt written (t = $t_int)" sh -c "[ $rc -eq 130 ] && [ -s $tmp/int_interrupted.ckpt ] && [ -s $tmp/int_interrupted.snap ]"
if [ -n "$t_int" ]; then
    t_stop=$(awk -v t="$t_int" 'BEGIN { printf "%.6f", t + 0.02 }')
    "$NB" $opts --t-end "$t_stop" --out "$tmp/straight" --csv >/dev/null 2>&1
    "$NB" $opts --t-end "$t_stop" --out "$tmp/resumed" --csv --resume "$tmp/int_interrupted.ckpt" >/dev/null 2>&1
    check "Ctrl-C then --resume: the final state equals the straight run's (t = $t_stop)" cmp "$tmp/straight_final.csv" "$tmp/resumed_final.csv"
fi

# ---- video through ffmpeg: frames and size checked with ffprobe; a clear message without ffmpeg
if command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1; then
    "$NB" --scenario galaxy --n 300 --dt 1e-3 --t-end 0.02 --video "$tmp/vid/clip.mp4" --video-every 0.001 --size 64 >"$tmp/vlog" 2>&1
    probe=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames,width,height -of csv=p=0 "$tmp/vid/clip.mp4" 2>&1)
    check "--video: 21 frames of 84x64 in the mp4 (ffprobe: $probe)" [ "$probe" = "84,64,21" ]
    check "--video: the log names the file and the frame count" grep -q "wrote $tmp/vid/clip.mp4: 21 frames" "$tmp/vlog"
else skip=$((skip + 1)); echo "SKIP --video: ffmpeg/ffprobe not installed"; fi
if command -v ffmpeg >/dev/null 2>&1 && [ -s "$tmp/vid/clip.mp4" ]; then
    cp "$tmp/vid/clip.mp4" "$tmp/clip.good"
    "$NB" --scenario galaxy --n 300 --dt 1e-3 --t-end 0.002 --snapshot-every 0.001 --out "$tmp/vr" >/dev/null 2>&1
    "$NB" --scenario galaxy --n 300 --dt 1e-3 --t-end 0.02 --resume "$tmp/vr_snap_000001.ckpt" --video "$tmp/vid/clip.mp4" \
        --size 64 >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "--resume with --video of an existing file: refused, the video kept ($(head -n 1 "$tmp/err"))" \
        sh -c "[ $rc -eq 2 ] && grep -q 'exists: a resumed run would replace it' $tmp/err && cmp $tmp/vid/clip.mp4 $tmp/clip.good"
    limited "$NB" --scenario galaxy --n 300 --dt 1e-3 --t-end 0.02 --video "$tmp/vid/clip.mp4" --video-every 0.001 --size 1024 \
        >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "write failure of the video (ulimit -f): exit 1, the older video intact, no partial file" \
        sh -c "[ $rc -eq 1 ] && cmp $tmp/vid/clip.mp4 $tmp/clip.good && ! ls $tmp/vid | grep -q tmp"
fi
env PATH=/nonexistent "$ROOT/$NB" --scenario figure8 --video "$tmp/x.mp4" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "--video without ffmpeg: exit 2 naming the package" sh -c "[ $rc -eq 2 ] && grep -q 'apt-get install ffmpeg' $tmp/err"

# ---- the float build (NBODY_REAL = float): it lands on a t-end that float cannot hold
# exactly (0.02 is 0.0199999996 in float), cuts the run into the same pieces, resumes
# bitwise, and refuses what float cannot resolve
NBF="$BUILD/nbody_float"
if [ -x "$NBF" ]; then
    check "float build: plummer --n 100 --t-end 0.02 ends at t-end (20 steps, within 20 s)" \
        sh -c "timeout 20 $NBF --scenario plummer --n 100 --t-end 0.02 | grep -q '^done: t = 0.0199999996, 20 steps'"
    opts="--scenario plummer --n 64 --seed 5 --dt 0.003 --t-end 0.1 --snapshot-every 0.025"
    timeout 20 "$NBF" $opts --out "$tmp/fa" >/dev/null 2>&1
    timeout 20 "$NBF" $opts --out "$tmp/fb" --resume "$tmp/fa_snap_000002.ckpt" >/dev/null 2>&1
    check "float build: snapshots at each 0.025 and the final one" sh -c "[ -s $tmp/fa_snap_000003.snap ] && [ -s $tmp/fa_final.snap ]"
    check "float build: --resume from a checkpoint ends bitwise as the straight run" cmp "$tmp/fa_final.snap" "$tmp/fb_final.snap"
    "$NBF" --scenario plummer --n 16 --dt 1e-6 --t-end 100 >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "float build: --dt 1e-6 at --t-end 100 refused (no longer moves t in float; double takes it)" \
        sh -c "[ $rc -eq 2 ] && grep -q 'no longer moves t' $tmp/err"
    for args in "--n 0" "--dt nan" "--scenario" "--t-end -1" "--archive-every 1"; do
        "$NBF" $args >"$tmp/out" 2>"$tmp/err"; rc=$?
        check "float build: nbody $args refused with exit 2 and one line" sh -c "[ $rc -eq 2 ] && [ \$(wc -l < $tmp/err) -eq 1 ]"
    done
else fail=$((fail + 1)); echo "FAIL $NBF missing (make $NBF)"; fi

echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
