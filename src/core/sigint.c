/* sigint.c — Ctrl-C for the REPL: a SIGINT handler that passes the signal
 * on to the handler it found (LuaJIT's, which turns it into an
 * "interrupted!" error at the next hook) and then installs itself again.
 * LuaJIT's own handler resets SIGINT to the default action, so without
 * this a second Ctrl-C before the first one lands ends the process. A
 * third press before the REPL's next prompt (code that never reaches a
 * hook) ends the process, saying why. */
#include "netcl.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static struct sigaction chained;
static int have_chained;
static volatile sig_atomic_t presses;

static void on_sigint(int sig)
{
    if (++presses >= 3) {
        static const char msg[] = "\nnetcl: the running code does not answer Ctrl-C; a third Ctrl-C ends the session\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
        return;
    }
    if (have_chained && chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN && !(chained.sa_flags & SA_SIGINFO))
        chained.sa_handler(sig);
    struct sigaction me;
    memset(&me, 0, sizeof me);
    me.sa_handler = on_sigint;
    sigemptyset(&me.sa_mask);
    sigaction(SIGINT, &me, NULL);
}

int netcl_sigint_arm(void)
{
    struct sigaction now, me;
    presses = 0;
    if (sigaction(SIGINT, NULL, &now) != 0) return -1;
    if (now.sa_handler != on_sigint) {   /* remember whoever is there now (LuaJIT's handler) */
        chained = now;
        have_chained = 1;
    }
    memset(&me, 0, sizeof me);
    me.sa_handler = on_sigint;
    sigemptyset(&me.sa_mask);
    return sigaction(SIGINT, &me, NULL);
}
