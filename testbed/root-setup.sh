# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/root-setup.sh: one-time configuration run inside a fresh testbed
# root by mkroot (part of the recipe hash).
set -euo pipefail
# Two real test users for multi-user tests (fair share, channel auth).
for u in alice:2001 bob:2002; do
	name=${u%%:*} uid=${u##*:}
	id "$name" >/dev/null 2>&1 || useradd -m -u "$uid" -U -s /bin/bash "$name"
done
# Open MPI as root inside the testbed, and no ssh: everything is local.
mkdir -p /etc/openmpi
# Record what was installed, for the CI log and for bug reports.
{
	echo "slurm: $(slurmctld -V)"
	echo "openmpi: $(ompi_info --parsable 2>/dev/null | grep '^ompi:version:full' | cut -d: -f4)"
	echo "pmix: $(dpkg-query -W -f='${Version}' libpmix2t64 2>/dev/null || dpkg-query -W -f='${Version}' libpmix2 2>/dev/null || echo '?')"
	echo "hwloc: $(dpkg-query -W -f='${Version}' libhwloc15 2>/dev/null || echo '?')"
	echo "munge: $(dpkg-query -W -f='${Version}' munge)"
	echo "mariadb: $(dpkg-query -W -f='${Version}' mariadb-server)"
} >/etc/elastic-testbed-versions
cat /etc/elastic-testbed-versions
