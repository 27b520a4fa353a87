#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# autogen.sh: generate configure and Makefile.in from a git checkout.
set -e
cd "$(dirname "$0")"
mkdir -p config/aux
exec autoreconf --install --force --warnings=all
