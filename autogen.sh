#!/bin/sh
# Bootstraps the build system from a git checkout: generates configure.
set -e
cd "$(dirname "$0")"
autoreconf --install --force -Wall
