# shellcheck shell=bash
# Shared by tools/setup-{client,keystone,placement}-venv.sh: create or
# update a virtualenv of third-party programs that the tests run as separate
# processes (client tools, Keystone, Placement).  Their dependencies differ
# from the service's pins, so each gets a virtualenv of its own.
#
# tool_venv NAME VENV REQUIREMENTS CONSTRAINTS CHECK
#   NAME          short name, for messages and the stamp file
#   VENV          where the virtualenv goes
#   REQUIREMENTS  the requirements file to install
#   CONSTRAINTS   a constraints file, or '' when REQUIREMENTS pins all
#   CHECK         a function of the caller, given VENV: succeeds once the
#                 programs are usable, printing their versions
#
# Idempotent: when the virtualenv was already built from the same files
# with the same interpreter (a stamp file records their hash) and CHECK
# succeeds, it does nothing.  PYTHON (default python3) builds it.

tool_venv() {
    local name=$1 venv=$2 requirements=$3 constraints=$4 check=$5
    local stamp=$venv/.ironic-alloc-$name-requirements
    local python_path wanted
    local -a files=("$requirements") pip_constraints=()
    if [[ -n $constraints ]]; then
        files+=("$constraints")
        pip_constraints=(-c "$constraints")
    fi

    python_path=$(command -v "${PYTHON:-python3}") || {
        _tool_venv_log "$name" "no interpreter '${PYTHON:-python3}' found" >&2
        return 1
    }
    "$python_path" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
        _tool_venv_log "$name" "python >= 3.10 is required ($python_path is older)" >&2
        return 1
    }

    wanted=$({
        cat "${files[@]}"
        "$python_path" -c 'import sys; print(sys.version)'
    } | sha256sum | cut -d' ' -f1)

    if [[ -f $stamp && $(cat "$stamp") == "$wanted" ]] &&
            "$check" "$venv" >/dev/null 2>&1; then
        _tool_venv_log "$name" "$venv is up to date"
        return 0
    fi

    if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c '' 2>/dev/null; then
        _tool_venv_log "$name" "creating $venv with $python_path"
        rm -rf "$venv"
        "$python_path" -m venv "$venv" || return 1
    fi

    # NOTE: the stamp goes first so that an interrupted install is redone.
    rm -f "$stamp"
    _tool_venv_log "$name" "installing ${files[*]}"
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
        "$venv/bin/python" -m pip install --quiet \
        ${pip_constraints[@]+"${pip_constraints[@]}"} -r "$requirements" ||
        return 1
    "$venv/bin/python" -m pip check || return 1
    "$check" "$venv" || return 1
    echo "$wanted" >"$stamp"
    _tool_venv_log "$name" "$venv is ready"
}

_tool_venv_log() {
    local name=$1
    shift
    echo "setup-$name-venv: $*"
}
