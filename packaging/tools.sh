# Sourced by wheel.sh and sdist.sh: the pinned packaging tools (packaging/requirements.txt) in
# their own virtual environment, target/packaging-tools, made once and first on PATH.
tools="$PWD/target/packaging-tools"
if ! cmp -s packaging/requirements.txt "$tools/requirements.txt"; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --upgrade pip
  "$tools/bin/pip" install -q -r packaging/requirements.txt
  cp packaging/requirements.txt "$tools/requirements.txt"
fi
export PATH="$tools/bin:$PATH"
