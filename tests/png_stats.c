/* png_stats.c - helper of tests/test_viewer.sh: reads a PNG with libpng and prints
   "WIDTH HEIGHT LIT DISTINCT": the pixels that are not black and how many distinct colours
   (up to 4096) the picture has. Build: cc tests/png_stats.c -o png_stats -lpng */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    png_image img;
    unsigned char *px;
    unsigned long lit = 0, i, distinct = 0, seen_n = 0;
    static unsigned long seen[4096];
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (argc != 2 || !png_image_begin_read_from_file(&img, argv[1])) return 1;
    img.format = PNG_FORMAT_RGB;
    px = (unsigned char *)malloc(PNG_IMAGE_SIZE(img));
    if (!px || !png_image_finish_read(&img, NULL, px, 0, NULL)) return 1;
    for (i = 0; i < (unsigned long)img.width * img.height; ++i) {
        unsigned long c = ((unsigned long)px[3 * i] << 16) | ((unsigned long)px[3 * i + 1] << 8) | px[3 * i + 2], k;
        if (c) lit++;
        for (k = 0; k < seen_n && seen[k] != c; ++k) {}
        if (k == seen_n && seen_n < 4096) seen[seen_n++] = c;
    }
    distinct = seen_n;
    printf("%lu %lu %lu %lu\n", (unsigned long)img.width, (unsigned long)img.height, lit, distinct);
    free(px);
    return 0;
}
