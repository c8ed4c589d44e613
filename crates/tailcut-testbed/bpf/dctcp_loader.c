// SPDX-License-Identifier: Apache-2.0
/*
 * Registers the DCTCP congestion control (dctcp.bpf.c) for as long as this process lives.
 *
 *   dctcp_loader OBJECT
 *
 * Prints "ready" once the CC is registered, then reads commands on stdin: "stats" prints the BPF
 * counters as one JSON line; end of input (the testbed closed the pipe or died) unregisters the CC
 * and exits. The CC is registered through a struct_ops BPF link whose only holder is this process, so
 * that it is unregistered whatever ends the process, SIGKILL included: the kernel releases the link
 * when its last fd closes. A plain struct_ops map update would instead keep the CC registered after
 * the process is gone.
 *
 * Exit status 3: a CC of that name is already registered (the caller picks another name).
 */

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* Values of the kernel's uapi (6.4 and later); Debian 12's headers (6.1) predate struct_ops links. */
#ifndef BPF_F_LINK_VALUE
#define BPF_F_LINK_VALUE (1U << 13)
#endif
#define BPF_STRUCT_OPS_ATTACH 44

static const char *const STATS[] = {
	"connections", "windows", "windows_marked", "alpha_inside", "ece_reductions",
	"gentle_reductions", "loss_reductions", "undos", "ce_changes", "acks_flushed", "alpha_sum",
};

static char log_tail[4096];

/* Keeps the end of libbpf's messages (the verifier's verdict is at the end) for the error report. */
static int keep_log(enum libbpf_print_level level, const char *fmt, va_list args)
{
	char line[1024];
	size_t have, add;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, args);
	have = strlen(log_tail);
	add = strlen(line);
	if (have + add >= sizeof(log_tail)) {
		size_t drop = have + add - sizeof(log_tail) + 1;

		if (drop > have)
			drop = have;
		memmove(log_tail, log_tail + drop, have - drop + 1);
	}
	strncat(log_tail, line, sizeof(log_tail) - strlen(log_tail) - 1);
	return 0;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "%s: %s\n%s", what, strerror(err < 0 ? -err : err), log_tail);
	return err == -EEXIST || err == EEXIST ? 3 : 1;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_map *ops, *stats;
	struct bpf_link *update;
	char cmd[64];
	int link_fd, err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OBJECT\n", argv[0]);
		return 2;
	}
	/* Also set by the testbed when it starts us; here for manual use. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	libbpf_set_print(keep_log);
	obj = bpf_object__open_file(argv[1], NULL);
	err = libbpf_get_error(obj);
	if (err)
		return fail("open", err);
	ops = bpf_object__find_map_by_name(obj, "tailcut_dctcp");
	stats = bpf_object__find_map_by_name(obj, "tailcut_dctcp_stats");
	if (!ops || !stats)
		return fail("object without its maps", ENOENT);
	err = bpf_map__set_map_flags(ops, bpf_map__map_flags(ops) | BPF_F_LINK_VALUE);
	if (err)
		return fail("set BPF_F_LINK", err);
	err = bpf_object__load(obj);
	if (err)
		return fail("load (verifier or kernel BTF)", err);
	/* With BPF_F_LINK the map update only fills in the programs; the link below registers them. The
	 * returned libbpf link must not be destroyed: its destructor would try to delete the element. */
	update = bpf_map__attach_struct_ops(ops);
	err = libbpf_get_error(update);
	if (err)
		return fail("struct_ops map update", err);
	link_fd = bpf_link_create(bpf_map__fd(ops), 0, BPF_STRUCT_OPS_ATTACH, NULL);
	if (link_fd < 0)
		return fail("register (struct_ops link)", link_fd == -1 ? errno : link_fd);
	printf("ready\n");
	fflush(stdout);
	while (fgets(cmd, sizeof(cmd), stdin)) {
		if (strncmp(cmd, "stats", 5) != 0)
			continue;
		printf("{");
		for (__u32 k = 0; k < sizeof(STATS) / sizeof(STATS[0]); k++) {
			__u64 v = 0;

			bpf_map_lookup_elem(bpf_map__fd(stats), &k, &v);
			printf("%s\"%s\":%llu", k ? "," : "", STATS[k], (unsigned long long)v);
		}
		printf("}\n");
		fflush(stdout);
	}
	close(link_fd);
	bpf_object__close(obj);
	return 0;
}
