# Sourced by the CI scripts. retry wraps an install step (apt-get, npm
# install, a module download or a tool build), never a test: registries
# drop a connection now and then, and one dropped download should not fail
# a run whose tests would pass.

# retry CMD [ARG...]: runs CMD up to 3 times, 5 s then 15 s apart, naming
# each failure; returns the last attempt's status.
retry() {
	local attempt=1 rc delays=(5 15)
	while :; do
		"$@" && return 0
		rc=$?
		if [ "$attempt" -ge 3 ]; then
			printf 'retry: %s: failed %d times, last exit %d\n' "$*" "$attempt" "$rc" >&2
			return "$rc"
		fi
		printf 'retry: %s: exit %d (attempt %d of 3), again in %d s\n' "$*" "$rc" "$attempt" "${delays[attempt - 1]}" >&2
		sleep "${RETRY_DELAY_OVERRIDE:-${delays[attempt - 1]}}"
		attempt=$((attempt + 1))
	done
}
