# Sourced by the bench scripts that time manual refreshes (needs P, the
# psql command array, and die). did NAME ACTION: the last refresh of stream
# table NAME must be a MANUAL one recorded as ACTION, or the run exits: a
# timed refresh that found nothing to do (NO_DATA: the scheduler got there
# first, or the change missed the table) measured nothing.
did() {
    local got
    got=$("${P[@]}" -c "SELECT h.initiated_by || ' ' || h.action FROM pgtrickle.pgt_refresh_history h JOIN pgtrickle.pgt_stream_tables s USING (pgt_id) WHERE s.pgt_name = '$1' ORDER BY h.refresh_id DESC LIMIT 1")
    [[ $got == "MANUAL $2" ]] || die "the timed refresh of $1 is recorded as '$got', not 'MANUAL $2'"
}
