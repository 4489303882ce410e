/* Uses the INSTALLED kdc testkit (find_package(kdc COMPONENTS testkit)),
 * the way a service's own cmocka tests would; exits 0 only if the calls
 * behave. It starts no mock cluster: the scenario table, the options check
 * and the JSON report (jansson, a link-only dependency) are enough to prove
 * the library and its dependencies link from the install tree. */
#include <stdio.h>
#include <string.h>

#include <kdc/testkit.h>

int main(void) {
        kdc_testkit_options_t o;
        char why[256];
        const kdc_testkit_result_t *none[1] = {NULL};

        kdc_testkit_options_init(&o);
        if (kdc_testkit_options_validate(&o, why, sizeof(why)) != 0)
                return 1;
        o.events = 0;
        if (kdc_testkit_options_validate(&o, why, sizeof(why)) != KDC_ERR_INVALID ||
            why[0] == '\0')
                return 2;
        if (kdc_testkit_scenario_count() < 10)
                return 3;
        if (!kdc_testkit_scenario_find("sigkill-restart") ||
            kdc_testkit_scenario_find("no-such-scenario"))
                return 4;
        /* an empty list of results is a valid JSON report */
        if (kdc_testkit_results_print(none, 0, stdout, KDC_TESTKIT_JSON) != 0)
                return 5;
        printf("\nkdc testkit consumer ok, %zu scenarios\n", kdc_testkit_scenario_count());
        return 0;
}
