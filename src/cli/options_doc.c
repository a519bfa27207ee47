#include "cli/options_doc.h"

#include "config/config.h"

#include <string.h>

static const char *type_name(const struct cf_option *o, char *buf, size_t n)
{
    switch (o->type) {
    case CF_BOOL:
        return "bool";
    case CF_INT:
        snprintf(buf, n, "int %llu..%llu", (unsigned long long)o->lo, (unsigned long long)o->hi);
        return buf;
    case CF_SIZE:
        return "size";
    case CF_STRING:
        return "string";
    case CF_CHOICE:
        return cf_opt_choices((enum cf_opt_id)(o - cf_options));
    }
    return "?";
}

/* Prints text wrapped to width columns, each line indented by indent spaces. */
static void wrapped(FILE *out, const char *text, int indent, int width)
{
    while (*text) {
        int avail = width - indent, len = (int)strlen(text), cut = len;
        if (len > avail) {
            cut = avail;
            while (cut > 0 && text[cut] != ' ')
                cut--;
            if (cut == 0) cut = avail; /* one word longer than the line */
        }
        fprintf(out, "%*s%.*s\n", indent, "", cut, text);
        text += cut;
        while (*text == ' ')
            text++;
    }
}

void cf_print_options_text(FILE *out)
{
    char buf[64];
    fputs("Environment variables (read by libcudafrag.so; the options above set some of them):\n"
          "  bool: 1/yes/on/true or 0/no/off/false; size: bytes with an optional K, M, G or T "
          "suffix\n\n",
          out);
    for (int i = 0; i < CF_OPT_COUNT; i++) {
        const struct cf_option *o = &cf_options[i];
        fprintf(out, "  %-24s %-12s default \"%s\"\n", o->name, type_name(o, buf, sizeof buf),
                o->def);
        wrapped(out, o->doc, 6, 80);
    }
}

/* Markdown cells cannot hold a bare '|'. */
static void cell(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputc('\\', out);
        fputc(*s, out);
    }
}

void cf_print_options_markdown(FILE *out)
{
    char buf[64];
    fputs("| Variable | Type | Default | Meaning |\n|---|---|---|---|\n", out);
    for (int i = 0; i < CF_OPT_COUNT; i++) {
        const struct cf_option *o = &cf_options[i];
        /* An empty code span does not render: an empty default is said in words. */
        fprintf(out, "| `%s` | ", o->name);
        cell(out, type_name(o, buf, sizeof buf)); /* a choice's words are '|'-separated */
        if (o->def[0])
            fprintf(out, " | `%s` | ", o->def);
        else
            fputs(" | (empty) | ", out);
        cell(out, o->doc);
        fputs(" |\n", out);
    }
}
