#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# plugin/elasticd/test/restart_keys.sh TOP_SRCDIR: the keys elasticd keeps
# on SIGHUP until it restarts (its _keep_string/_keep_long calls; LogFile,
# whose own rule elasticd(8) gives, aside) are the list each of elasticd(8),
# elastic.conf(5) and the admin guide gives after "The keys that need a
# restart:". Exit 1 naming the document and the keys it misses or adds.
set -eu
top=${1:?usage: restart_keys.sh TOP_SRCDIR}
keys() { tr '\n' ' ' | tr -s ' ' '\n' | grep -E '^[A-Z][A-Za-z]+$' | sort -u; }
code=$(tr '\n' ' ' <"$top/plugin/elasticd/elasticd.c" |
	grep -oE '_keep_(string|long)\([^;]*"[A-Za-z]+"\);' |
	sed -E 's/.*"([A-Za-z]+)"\);/\1/' | grep -vx LogFile | keys)
[ -n "$code" ] || { echo "restart_keys: no _keep_ call found in elasticd.c" >&2; exit 1; }
bad=0
for doc in plugin/elasticd/elasticd.8 slurm-conf/elastic.conf.5 doc/admin-guide.md; do
	list=$(tr '\n' ' ' <"$top/$doc" | grep -oE 'The keys that need a restart: [^.]*\.' | head -n 1 |
		sed -e 's/^The keys that need a restart: //' -e 's/[`.,]/ /g' | keys)
	if [ "$list" != "$code" ]; then
		echo "restart_keys: $doc lists the keys that need a restart as [$(echo $list)]; elasticd keeps [$(echo $code)]" >&2
		bad=1
	fi
done
[ $bad = 0 ] && echo "restart_keys: elasticd(8), elastic.conf(5) and the admin guide list the $(echo "$code" | wc -l) keys elasticd keeps until a restart"
exit $bad
