#!/bin/sh
# always_stop.sh: a stress-exec/1 backend in POSIX sh. It answers every
# call with stop_or_escalate (the always_stop baseline, as a program).
# The id is the first member of every request line, so a pattern reads it.
# It exits when stdin ends. See models/README.md ("The exec backend").
while IFS= read -r line; do
	id=$(printf '%s\n' "$line" | sed -n 's/^{"id":\([0-9][0-9]*\).*/\1/p')
	if [ -z "$id" ]; then
		echo "always_stop.sh: a request without an id" >&2
		exit 2
	fi
	case $line in
	*'"type":"hello"'*)
		printf '{"id":%s,"meta":{"name":"always_stop.sh","version":"1"}}\n' "$id" ;;
	*)
		printf '{"id":%s,"text":"{\\"operation_status\\":\\"failed\\",\\"recovery_policy\\":\\"stop_or_escalate\\"}"}\n' "$id" ;;
	esac
done
