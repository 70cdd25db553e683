/// libinput's documented formula, written independently of the Swift code: the axis
/// range is read from the recording's own `A:` lines, each position normalized over it
/// as `(v − min) / (max − min)`, the calibration matrix `[a b c; d e f]` applied, then
/// libinput's matrix for a touchscreen rotated R clockwise, then scaled to the screen.
public let libinputFormulaScript = #"""
    import sys
    axes_file, points_file, width, height, rotation = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    a, b, c, d, e, f = map(float, sys.argv[6:12])
    ranges = {}
    for line in open(axes_file, encoding="utf-8", errors="replace"):
        if line.startswith("A:"):
            words = line.split()
            ranges[int(words[1], 16)] = (int(words[2]), int(words[3]))
    rotations = {0: (1, 0, 0, 0, 1, 0), 90: (0, -1, 1, 1, 0, 0), 180: (-1, 0, 1, 0, -1, 1), 270: (0, 1, 0, -1, 0, 1)}
    r = rotations[rotation]
    for line in open(points_file):
        kind, x, y = line.split()
        xcode, ycode = (0x35, 0x36) if kind == "mt" else (0x00, 0x01)
        (xmin, xmax), (ymin, ymax) = ranges[xcode], ranges[ycode]
        nx, ny = (int(x) - xmin) / (xmax - xmin), (int(y) - ymin) / (ymax - ymin)
        cx, cy = a * nx + b * ny + c, d * nx + e * ny + f
        rx, ry = r[0] * cx + r[1] * cy + r[2], r[3] * cx + r[4] * cy + r[5]
        print(repr(rx * width), repr(ry * height))
    """#
