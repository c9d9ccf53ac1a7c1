# frozen_string_literal: true

module LlmFailover
  class Report
    # The failure rate of each target over the period as inline SVG: one line per
    # provider and model through its buckets (a point per bucket with attempts, broken
    # where a bucket had none), with bands behind them for incident windows and circuit
    # openings.
    class TimelineChart
      # @!attribute kind [String] "incident" or "circuit" (its CSS class)
      Band = Struct.new(:kind, :starts_at, :ends_at, :label, keyword_init: true)

      WIDTH = 1200
      HEIGHT = 300
      LEFT = 48
      RIGHT = 16
      TOP = 12
      BOTTOM = 36
      TICKS = 6
      # Times between two labels on the time axis (seconds): the first that gives at
      # most about TICKS labels, each on a round time (UTC midnight for days).
      TICK_INTERVALS = [60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400, 2 * 86_400, 7 * 86_400,
                        14 * 86_400, 28 * 86_400].freeze
      MIN_BAND = 2 # px: a 5-minute window on a week's axis is still seen
      # The top of the rate axis: the first that holds the highest rate, so that a day
      # of 2% failures is not a flat line at the bottom.
      SCALES = [0.1, 0.2, 0.5, 1.0].freeze
      COLORS = 8

      # @param id [String] unique in the page
      # @param timeline [Timeline]
      # @param bands [Array<Band>]
      def initialize(id:, title:, description:, timeline:, bands:)
        @id = id
        @title = title
        @description = description
        @timeline = timeline
        @bands = bands
        @plot_width = WIDTH - LEFT - RIGHT
        @plot_height = HEIGHT - TOP - BOTTOM
        highest = timeline.points.map(&:rate).max || 0
        @scale = SCALES.find { |top| highest <= top }
      end

      # @return [Float] the rate at the top of the axis
      attr_reader :scale

      # @return [Array<String>] the targets, in their colours' order
      def targets
        @timeline.targets
      end

      # @return [String] the target's colour: a CSS class, c0 .. c7 (page.css), reused
      #   past eight targets
      def color(target)
        "c#{targets.index(target) % COLORS}"
      end

      # @param m [Markup]
      def render(m)
        m.tag(:svg, class: "chart timeline", viewBox: "0 0 #{WIDTH} #{HEIGHT}", width: WIDTH, height: HEIGHT,
                    role: "img", aria_labelledby: "#{@id}-title #{@id}-desc") do
          m.tag(:title, @title, id: "#{@id}-title")
          m.tag(:desc, "#{@description} The rate axis ends at #{format('%g%%', @scale * 100)}.", id: "#{@id}-desc")
          @bands.each { |band| draw_band(m, band) }
          draw_axes(m)
          targets.each { |target| draw_series(m, target) }
        end
      end

      private

      def x_of(time)
        span = @timeline.ends_at - @timeline.starts_at
        (LEFT + ((time - @timeline.starts_at) / span * @plot_width)).clamp(LEFT, LEFT + @plot_width)
      end

      def y_of(rate)
        TOP + ((1 - (rate / @scale)) * @plot_height)
      end

      def draw_band(m, band)
        x = x_of(band.starts_at)
        width = [x_of(band.ends_at) - x, MIN_BAND].max
        m.tag(:rect, x: x.round(1), y: TOP, width: width.round(1), height: @plot_height, class: "band #{band.kind}",
                     data_from: band.starts_at.utc.iso8601, data_to: band.ends_at.utc.iso8601) do
          m.tag(:title, band.label)
        end
      end

      def draw_axes(m)
        m.tag(:g, class: "axis", aria_hidden: "true") do
          [0, 0.25, 0.5, 0.75, 1].each do |fraction|
            y = y_of(fraction * @scale).round(1)
            m.tag(:line, x1: LEFT, x2: LEFT + @plot_width, y1: y, y2: y, class: fraction.zero? ? "base" : "grid")
            m.tag(:text, format("%g%%", fraction * @scale * 100), x: LEFT - 6, y: y, class: "y")
          end
          ticks.each do |time|
            x = x_of(time).round(1)
            m.tag(:line, x1: x, x2: x, y1: TOP + @plot_height, y2: TOP + @plot_height + 4, class: "base")
            m.tag(:text, tick_label(time), x: x, y: HEIGHT - 14, class: "x")
          end
        end
      end

      # Round times on the axis, about TICKS of them.
      def ticks
        span = @timeline.ends_at - @timeline.starts_at
        @interval = TICK_INTERVALS.find { |i| span / i <= TICKS } || (span / TICKS / 86_400.0).ceil * 86_400
        first = (@timeline.starts_at.to_i / @interval.to_f).ceil * @interval
        (first..@timeline.ends_at.to_i).step(@interval).map { |t| Time.at(t).utc }
      end

      def tick_label(time)
        return time.strftime("%m-%d") if @interval >= 86_400
        return time.strftime("%H:%M") if @timeline.ends_at - @timeline.starts_at <= 86_400

        time.strftime("%m-%d %H:%M")
      end

      def draw_series(m, target)
        points = @timeline.points.select { |p| p.target == target }
        m.tag(:g, class: "series #{color(target)}", data_target: target) do
          m.tag(:title, target)
          runs(points).each do |run|
            next if run.size < 2

            m.tag(:polyline, points: run.map { |p| "#{center(p).round(1)},#{y_of(p.rate).round(1)}" }.join(" "))
          end
          points.each { |point| draw_point(m, point) }
        end
      end

      def draw_point(m, point)
        m.tag(:circle, cx: center(point).round(1), cy: y_of(point.rate).round(1), r: 3,
                       data_at: point.starts_at.utc.iso8601, data_attempts: point.attempts,
                       data_failures: point.failures) do
          m.tag(:title, "#{point.target}, #{point.starts_at.utc.strftime('%Y-%m-%d %H:%M')} UTC: " \
                        "#{point.failures} of #{point.attempts} attempts failed " \
                        "(#{format('%.1f%%', point.rate * 100)})")
        end
      end

      def center(point)
        x_of(point.starts_at + (@timeline.step / 2.0))
      end

      # Points in consecutive buckets: a line never crosses a bucket without attempts.
      def runs(points)
        points.slice_when { |a, b| b.starts_at - a.starts_at > @timeline.step }.to_a
      end
    end
  end
end
