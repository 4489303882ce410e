/*
 * `kdc-lint merge [-o FILE] REPORT...`: joins the JSON or SARIF reports of the
 * N shards of one run (--shard=K/N, see shard.h) into the report the unsharded
 * run writes.
 */
#ifndef KDC_MERGE_H
#define KDC_MERGE_H

/* argv[0] is "merge". Returns the exit code: 0 no findings, 1 findings, 2 an
 * error (bad usage; a report that cannot be read, is not a shard report, or
 * does not belong with the others; or input errors recorded in the reports,
 * as the unsharded run would have exited). */
int kdc_merge_main(int argc, char **argv);

#endif
