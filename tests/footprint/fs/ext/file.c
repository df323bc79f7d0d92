/* SPDX-License-Identifier: MIT */

/*
 * The other source file of the footprint test object (tests/test-footprint.py), under
 * tests/footprint/fs/ext, with main() so that it links into an executable.
 */

int mm_alloc_pages(int n);
int ext_file_read(int n);

long ext_filedata[20] = { 5 };
long ext_filebss[300];
const long ext_filetable[64] = { 1, 2, 3 };

int ext_file_read(int n) {
        ext_filebss[n % 300] = n;
        return mm_alloc_pages(n) + (int) ext_filedata[n % 20] + (int) ext_filetable[n & 63];
}

int main(int argc, char *argv[]) {
        (void) argv;
        return ext_file_read(argc) & 1;
}
