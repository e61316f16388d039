#!/bin/sh
# make check: the user and group the systemd unit runs as are the ones the
# installed sysusers.d entry creates, its home is the unit's state
# directory, and the README names the command that creates the user (make
# install runs it as root). Run from the top build directory.
src=$(cd "$(dirname "$0")/.." && pwd)
unit=$src/systemd/gexecd.service.in
conf=$src/systemd/gexec.conf
fail() { echo "sysusers: $*"; exit 1; }
user=$(sed -n 's/^User=//p' "$unit")
group=$(sed -n 's/^Group=//p' "$unit")
state=$(sed -n 's/^StateDirectory=//p' "$unit")
[ -n "$user" ] && [ -n "$group" ] && [ -n "$state" ] || fail "$unit: no User=, Group= or StateDirectory="
# u NAME ID GECOS HOME: a user of that name and its group of the same name
line=$(grep -E "^u[[:space:]]+$user[[:space:]]" "$conf") || fail "$conf creates no user '$user' (User= of the unit)"
[ "$group" = "$user" ] || grep -qE "^g[[:space:]]+$group[[:space:]]" "$conf" ||
    fail "$conf creates no group '$group' (Group= of the unit)"
home=$(echo "$line" | awk '{print $NF}')
[ "$home" = "/var/lib/$state" ] || fail "$conf: home $home is not the unit's StateDirectory /var/lib/$state"
grep -q "systemd-sysusers" "$src/README.md" || fail "README.md does not say how the user is created"
grep -q "systemd-sysusers" "$src/Makefile.am" || fail "make install does not create the user"
echo "sysusers: ok (user $user, group $group, home $home)"
