// An independent reader of key events through libxkbcommon, for the keymap tests: it shares
// no code with RingLoop's keymap (the tests compile it with cc against libxkbcommon and
// compare what it prints with what KeyboardState gives for the same key sequence).
//
//   xkb-reference RULES MODEL LAYOUT VARIANT OPTIONS LOCALE EVENTS
//
// EVENTS: lines "CODE VALUE" (a Linux key code; 0 up, 1 down, 2 repeat). LOCALE "-": no
// Compose table. For each event it prints one line:
//   CODE VALUE KEYSYM-NAME TEXT-HEX LEDS
// (TEXT-HEX "-" for no text; LEDS the lit LEDs of num, caps, scroll joined by ",", "-" for none), or
// "CODE VALUE ignored" for a repeat of a key the keymap says does not repeat. Keysym and
// text are read from the state before the event updates it, the compose state is fed on
// presses and repeats, a cancelled sequence swallows its key (libX11's choice, which
// xkbcli interactive-evdev follows).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xkbcommon/xkbcommon.h>
#include <xkbcommon/xkbcommon-compose.h>

static void print_hex(const char *text) {
    if (!*text) { printf("-"); return; }
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) printf("%02x", *p);
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: %s RULES MODEL LAYOUT VARIANT OPTIONS LOCALE EVENTS\n", argv[0]);
        return 2;
    }
    struct xkb_context *context = xkb_context_new(XKB_CONTEXT_NO_ENVIRONMENT_NAMES);
    if (!context) return 3;
    struct xkb_rule_names names = {argv[1], argv[2], argv[3], argv[4], argv[5]};
    struct xkb_keymap *keymap = xkb_keymap_new_from_names(context, &names, XKB_KEYMAP_COMPILE_NO_FLAGS);
    if (!keymap) { fprintf(stderr, "cannot compile the keymap\n"); return 4; }
    struct xkb_state *state = xkb_state_new(keymap);
    struct xkb_compose_state *compose = NULL;
    if (strcmp(argv[6], "-") != 0) {
        struct xkb_compose_table *table = xkb_compose_table_new_from_locale(context, argv[6], XKB_COMPOSE_COMPILE_NO_FLAGS);
        if (!table) { fprintf(stderr, "no compose table for %s\n", argv[6]); return 5; }
        compose = xkb_compose_state_new(table, XKB_COMPOSE_STATE_NO_FLAGS);
        xkb_compose_table_unref(table);
    }
    FILE *events = fopen(argv[7], "r");
    if (!events) { perror(argv[7]); return 6; }
    unsigned code;
    int value;
    char text[256];
    char name[64];
    while (fscanf(events, "%u %d", &code, &value) == 2) {
        xkb_keycode_t keycode = code + 8;
        if (value == 2 && !xkb_keymap_key_repeats(keymap, keycode)) {
            printf("%u %d ignored\n", code, value);
            continue;
        }
        xkb_keysym_t keysym = xkb_state_key_get_one_sym(state, keycode);
        text[0] = 0;
        if (value != 0) {
            int plain = 1;
            if (compose && xkb_compose_state_feed(compose, keysym) == XKB_COMPOSE_FEED_ACCEPTED) {
                enum xkb_compose_status status = xkb_compose_state_get_status(compose);
                if (status == XKB_COMPOSE_COMPOSING || status == XKB_COMPOSE_CANCELLED) plain = 0;
                if (status == XKB_COMPOSE_COMPOSED) {
                    plain = 0;
                    xkb_keysym_t result = xkb_compose_state_get_one_sym(compose);
                    if (result != XKB_KEY_NoSymbol) keysym = result;
                    xkb_compose_state_get_utf8(compose, text, sizeof text);
                }
                if (status == XKB_COMPOSE_COMPOSED || status == XKB_COMPOSE_CANCELLED) xkb_compose_state_reset(compose);
            }
            if (plain) xkb_state_key_get_utf8(state, keycode, text, sizeof text);
        }
        if (value != 2) xkb_state_update_key(state, keycode, value ? XKB_KEY_DOWN : XKB_KEY_UP);
        xkb_keysym_get_name(keysym, name, sizeof name);
        printf("%u %d %s ", code, value, name);
        print_hex(text);
        int any = 0;
        const char *leds[] = {XKB_LED_NAME_NUM, XKB_LED_NAME_CAPS, XKB_LED_NAME_SCROLL};
        const char *shown[] = {"num", "caps", "scroll"};
        printf(" ");
        for (int i = 0; i < 3; i++) {
            if (xkb_state_led_name_is_active(state, leds[i]) > 0) { printf("%s%s", any ? "," : "", shown[i]); any = 1; }
        }
        printf("%s\n", any ? "" : "-");
    }
    fclose(events);
    return 0;
}
