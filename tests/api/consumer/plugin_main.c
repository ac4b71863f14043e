/* SPDX-License-Identifier: MIT */
#include <stdio.h>

int plugin_run(void);

int main(void)
{
	int v = plugin_run();

	if (v != 3) {
		fprintf(stderr, "consumer plugin: got %d, expected 3\n", v);
		return 1;
	}
	printf("consumer plugin ok\n");
	return 0;
}
