// Uses the installed libkdc from C++: proves the extern "C" guards.
#include <cstdio>

#include <kdc/kdc.h>

int main() {
        kdc_tracker_t *t = nullptr;

        if (kdc_tracker_new(&t) != KDC_OK)
                return 1;
        if (kdc_tracker_wait(t, nullptr, 0) != KDC_ERR_INVALID)
                return 2;
        kdc_tracker_destroy(t);
        if (kdc_commit_message(nullptr, nullptr, nullptr, 0, nullptr) != KDC_ERR_INVALID)
                return 3;
        std::printf("kdc consumer (C++) ok: %s\n", kdc_strerror(KDC_ERR_TIMEOUT));
        return 0;
}
