# Several git commands, one after another, in one process: what scribe's git (confined.py) runs
# when a moment asks several questions at once, so that they share one sandbox. Run as
# `bash -c "$(this file)" scribe-git TOKEN GIT STOP N1 ARGS1... N2 ARGS2...`: TOKEN is random per
# run, GIT the git executable, STOP 1 to stop at the first command that fails; then each command
# as its count of arguments and the arguments. After a command's own output, its stdout gets NUL,
# TOKEN, a space, its exit status and NUL; its stderr NUL, TOKEN and NUL. No command reads stdin.
t=$1 g=$2 k=$3
shift 3
while (($#)); do
  n=$1
  shift
  "$g" "${@:1:n}" </dev/null
  s=$?
  shift "$n"
  printf '\0%s %d\0' "$t" "$s"
  printf '\0%s\0' "$t" >&2
  ((s && k)) && break
done
exit 0
