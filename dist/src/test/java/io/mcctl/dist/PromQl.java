package io.mcctl.dist;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Just enough of PromQL's lexical structure to list what an expression names: its metric selectors (with the label
 * names they match on) and the label names of its by, without, on, ignoring and group_ clauses. Prometheus evaluates
 * the expressions; this only finds the names to check against what the master exports.
 */
final class PromQl {

    /** A metric selector: the metric's name and the label names its matchers use. */
    record Selector(String metric, Set<String> labels) {
    }

    record Names(List<Selector> selectors, Set<String> groupingLabels) {
    }

    private static final Set<String> KEYWORDS = Set.of("by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
            "count_values", "group", "inf", "nan");
    private static final Set<String> GROUPING = Set.of("by", "without", "on", "ignoring", "group_left", "group_right");
    private static final Pattern IDENTIFIER = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");

    private PromQl() {
    }

    static Names names(String expr) {
        List<Selector> selectors = new ArrayList<>();
        Set<String> grouping = new LinkedHashSet<>();
        int i = 0;
        int n = expr.length();
        while (i < n) {
            char c = expr.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = skipString(expr, i);
            } else if (c == '[') {
                i = expr.indexOf(']', i) + 1; // a range or subquery: durations only
            } else if (c == '{') {
                Set<String> labels = new LinkedHashSet<>();
                i = matchers(expr, i, labels);
                selectors.add(new Selector(null, labels)); // a selector without a name: {__name__=...}
            } else if (Character.isDigit(c) || (c == '.' && i + 1 < n && Character.isDigit(expr.charAt(i + 1)))) {
                while (i < n && (Character.isLetterOrDigit(expr.charAt(i)) || expr.charAt(i) == '.' || expr.charAt(i) == '+'
                        && Character.toLowerCase(expr.charAt(i - 1)) == 'e')) {
                    i++; // a number, in any of its forms (1e10, 0x1f), or a duration after offset
                }
            } else if (Character.isLetter(c) || c == '_' || c == ':') {
                Matcher identifier = IDENTIFIER.matcher(expr).region(i, n);
                identifier.lookingAt();
                String word = identifier.group();
                i = identifier.end();
                int next = skipSpace(expr, i);
                String lower = word.toLowerCase(java.util.Locale.ROOT);
                if (GROUPING.contains(lower)) {
                    if (next < n && expr.charAt(next) == '(') {
                        int close = expr.indexOf(')', next);
                        for (String label : expr.substring(next + 1, close).split(",")) {
                            if (!label.isBlank()) {
                                grouping.add(label.strip());
                            }
                        }
                        i = close + 1;
                    }
                } else if (next < n && expr.charAt(next) == '(' || KEYWORDS.contains(lower)) {
                    // a function or an operator keyword
                } else {
                    Set<String> labels = new LinkedHashSet<>();
                    if (next < n && expr.charAt(next) == '{') {
                        i = matchers(expr, next, labels);
                    }
                    selectors.add(new Selector(word, labels));
                }
            } else {
                i++;
            }
        }
        return new Names(selectors, grouping);
    }

    /** Reads {@code {a="x", b=~"y"}} from {@code open}; adds the label names; returns the index after the closing brace. */
    private static int matchers(String expr, int open, Set<String> labels) {
        int i = open + 1;
        while (i < expr.length() && expr.charAt(i) != '}') {
            char c = expr.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = skipString(expr, i);
            } else if (Character.isLetter(c) || c == '_') {
                Matcher identifier = IDENTIFIER.matcher(expr).region(i, expr.length());
                identifier.lookingAt();
                labels.add(identifier.group());
                i = identifier.end();
            } else {
                i++;
            }
        }
        return i + 1;
    }

    private static int skipString(String expr, int open) {
        char quote = expr.charAt(open);
        int i = open + 1;
        while (expr.charAt(i) != quote) {
            i += expr.charAt(i) == '\\' && quote != '`' ? 2 : 1;
        }
        return i + 1;
    }

    private static int skipSpace(String expr, int i) {
        while (i < expr.length() && Character.isWhitespace(expr.charAt(i))) {
            i++;
        }
        return i;
    }
}
