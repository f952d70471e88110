/*
 * The operator's commands of flashsale-admin for a running sale (list,
 * close, extend, watch, dead-letter replay), in their own file so that the
 * tool's main file stays a list of commands.
 */
#ifndef FS_ADMIN_OPS_H
#define FS_ADMIN_OPS_H

/* Usage lines of these commands. */
extern const char admin_ops_usage[];

/* Says what went wrong on standard error; returns the exit status 1 (admin.c). */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Runs the command of argv when it is one of these: its exit status, or -1
 * when argv names another command.
 */
int admin_ops_main(int argc, char **argv);

#endif
