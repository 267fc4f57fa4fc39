/* Minimal checking macros for the unit tests. Every failed check prints the
 * expression, the values compared and the tolerance; the test keeps going so
 * one run shows every failure, and check_exit() turns the count into the
 * process status ctest reads. */
#ifndef STEM_TEST_CHECK_H
#define STEM_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_failures_ = 0;
static int check_count_ = 0;

#define CHECK_FAIL_(...)                                                                                               \
    do {                                                                                                               \
        check_failures_++;                                                                                             \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                           \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fputc('\n', stderr);                                                                                           \
    } while (0)

/* A condition, with a printf-style explanation on failure. */
#define CHECK_MSG(cond, ...)                                                                                           \
    do {                                                                                                               \
        check_count_++;                                                                                                \
        if (!(cond)) CHECK_FAIL_("CHECK(" #cond ") " __VA_ARGS__);                                                     \
    } while (0)
#define CHECK(cond) CHECK_MSG(cond, "%s", "")

/* |a - b| <= tol */
#define CHECK_CLOSE(a, b, tol)                                                                                         \
    do {                                                                                                               \
        double ca_ = (a), cb_ = (b), ct_ = (tol);                                                                      \
        check_count_++;                                                                                                \
        if (!(fabs(ca_ - cb_) <= ct_))                                                                                 \
            CHECK_FAIL_("CHECK_CLOSE(%s, %s): %.10g vs %.10g, |diff| %.3g > tol %.3g", #a, #b, ca_, cb_,               \
                        fabs(ca_ - cb_), ct_);                                                                         \
    } while (0)

/* |a - b| <= rtol |b| */
#define CHECK_REL(a, b, rtol)                                                                                          \
    do {                                                                                                               \
        double ca_ = (a), cb_ = (b), ct_ = (rtol);                                                                     \
        check_count_++;                                                                                                \
        if (!(fabs(ca_ - cb_) <= ct_ * fabs(cb_)))                                                                     \
            CHECK_FAIL_("CHECK_REL(%s, %s): %.10g vs %.10g, relative diff %.3g > rtol %.3g", #a, #b, ca_, cb_,         \
                        fabs(ca_ - cb_) / fabs(cb_), ct_);                                                             \
    } while (0)

/* a <= b (value below a bound) */
#define CHECK_LE(a, b)                                                                                                 \
    do {                                                                                                               \
        double ca_ = (a), cb_ = (b);                                                                                   \
        check_count_++;                                                                                                \
        if (!(ca_ <= cb_)) CHECK_FAIL_("CHECK_LE(%s, %s): %.10g > %.10g", #a, #b, ca_, cb_);                           \
    } while (0)

#define CHECK_GE(a, b)                                                                                                 \
    do {                                                                                                               \
        double ca_ = (a), cb_ = (b);                                                                                   \
        check_count_++;                                                                                                \
        if (!(ca_ >= cb_)) CHECK_FAIL_("CHECK_GE(%s, %s): %.10g < %.10g", #a, #b, ca_, cb_);                           \
    } while (0)

#define CHECK_INT_EQ(a, b)                                                                                             \
    do {                                                                                                               \
        long ca_ = (long)(a), cb_ = (long)(b);                                                                         \
        check_count_++;                                                                                                \
        if (ca_ != cb_) CHECK_FAIL_("CHECK_INT_EQ(%s, %s): %ld vs %ld", #a, #b, ca_, cb_);                             \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                                                               \
    do {                                                                                                               \
        const char *ch_ = (haystack), *cn_ = (needle);                                                                 \
        check_count_++;                                                                                                \
        if (!ch_ || !strstr(ch_, cn_))                                                                                 \
            CHECK_FAIL_("CHECK_CONTAINS(%s, \"%s\"): text was \"%s\"", #haystack, cn_, ch_ ? ch_ : "(null)");          \
    } while (0)

/* Abort the test at once (setup failed, nothing further is meaningful). */
#define REQUIRE(cond)                                                                                                  \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "FATAL %s:%d: REQUIRE(%s) failed\n", __FILE__, __LINE__, #cond);                           \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static inline int check_exit(const char *name)
{
    if (check_failures_) {
        fprintf(stderr, "%s: %d of %d checks FAILED\n", name, check_failures_, check_count_);
        return 1;
    }
    printf("%s: all %d checks passed\n", name, check_count_);
    return 0;
}

/* Capture what the code under test prints to stderr (error messages), so the
 * tests can check that messages name the line, the key, the suggestion. */
typedef struct {
    int saved_fd;
    FILE *tmp;
} check_capture;

static inline void capture_stderr_begin(check_capture *c)
{
    fflush(stderr);
    c->tmp = tmpfile();
    REQUIRE(c->tmp);
    c->saved_fd = dup(fileno(stderr));
    REQUIRE(c->saved_fd >= 0);
    REQUIRE(dup2(fileno(c->tmp), fileno(stderr)) >= 0);
}

/* Restores stderr; returns the captured text (malloc'd), also echoed. */
static inline char *capture_stderr_end(check_capture *c)
{
    fflush(stderr);
    dup2(c->saved_fd, fileno(stderr));
    close(c->saved_fd);
    long n = ftell(c->tmp);
    char *text = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
    REQUIRE(text);
    rewind(c->tmp);
    if (n > 0 && fread(text, 1, (size_t)n, c->tmp) != (size_t)n) text[0] = 0;
    fclose(c->tmp);
    fprintf(stderr, "  [captured] %s", text[0] ? text : "(nothing)\n");
    return text;
}

#endif
