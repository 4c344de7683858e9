# plot_scaling.awk: the scaling plot of bench/run-scaling.sh as an SVG image,
# with awk alone. Reads lines "EXAMPLE GPUS SPEEDUP" (runs under mgpu; any
# order) and draws speedup against GPUs, one coloured line per example, and
# the ideal (speedup = GPUs) dashed.
#   awk -v title="TEXT" -f bench/plot_scaling.awk DATA > plot.svg

function px(gpus) { return left + (gpus - 1) / (max_x - 1) * plot_w }
function py(speedup) { return top + plot_h - speedup / max_y * plot_h }
function escape(text) {
    gsub(/&/, "\\&amp;", text); gsub(/</, "\\&lt;", text); gsub(/>/, "\\&gt;", text)
    return text
}

NF >= 3 {
    name = $1
    if (!(name in points)) {
        names[++examples] = name
        points[name] = 0
    }
    k = ++points[name]
    gpus[name, k] = $2 + 0
    speedup[name, k] = $3 + 0
    if ($2 + 0 > most_gpus) most_gpus = $2 + 0
    if ($3 + 0 > most_speedup) most_speedup = $3 + 0
}

END {
    width = 760; height = 480; left = 70; right = 200; top = 50; bottom = 60
    plot_w = width - left - right; plot_h = height - top - bottom
    max_x = most_gpus < 2 ? 2 : most_gpus
    max_y = max_x > most_speedup ? max_x : most_speedup
    max_y = int(max_y) == max_y ? max_y : int(max_y) + 1
    split("#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f", colour, " ")

    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"13\">\n", width, height, width, height
    printf "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height
    printf "<text x=\"%d\" y=\"28\" font-size=\"16\">%s</text>\n", left, escape(title == "" ? "mgpu scaling" : title)

    # Grid, ticks and axis labels.
    for (g = 1; g <= max_x; g++) {
        printf "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e0e0e0\"/>\n", px(g), top, px(g), top + plot_h
        printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", px(g), top + plot_h + 18, g
    }
    for (s = 0; s <= max_y; s++) {
        printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n", left, py(s), left + plot_w, py(s)
        printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n", left - 8, py(s) + 4, s
    }
    printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n", left, top, plot_w, plot_h
    printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">GPUs (mgpu-run -n)</text>\n", left + plot_w / 2, height - 15
    printf "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">speedup over one GPU without mgpu</text>\n", top + plot_h / 2

    # The ideal line, then one line per example, points in GPU order.
    printf "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888888\" stroke-dasharray=\"6 4\"/>\n", px(1), py(1), px(max_x), py(max_x)
    for (e = 1; e <= examples; e++) {
        name = names[e]
        c = colour[(e - 1) % 10 + 1]
        n = points[name]
        for (i = 1; i <= n; i++)
            order[i] = i
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && gpus[name, order[j]] < gpus[name, order[j - 1]]; j--) {
                t = order[j]; order[j] = order[j - 1]; order[j - 1] = t
            }
        line = ""
        for (i = 1; i <= n; i++)
            line = line sprintf("%.1f,%.1f ", px(gpus[name, order[i]]), py(speedup[name, order[i]]))
        printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", line, c
        for (i = 1; i <= n; i++)
            printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", px(gpus[name, order[i]]), py(speedup[name, order[i]]), c
        ly = top + 10 + 22 * (e - 1)
        printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n", left + plot_w + 15, ly, left + plot_w + 40, ly, c
        printf "<text x=\"%d\" y=\"%d\">%s</text>\n", left + plot_w + 46, ly + 4, escape(name)
    }
    ly = top + 10 + 22 * examples
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888888\" stroke-dasharray=\"6 4\"/>\n", left + plot_w + 15, ly, left + plot_w + 40, ly
    printf "<text x=\"%d\" y=\"%d\">ideal</text>\n", left + plot_w + 46, ly + 4
    print "</svg>"
}
