# frozen_string_literal: true

module LlmFailover
  class Report
    # A horizontal bar chart as inline SVG: one bar per label, each bar one or more
    # stacked segments. Every bar carries its numbers (data-value, a <title> a pointer
    # shows) and the chart its accessible name (role="img", <title>, <desc>).
    class BarChart
      # @!attribute color [String] its CSS class: c0 .. c7, ok, failed (page.css)
      Segment = Struct.new(:name, :value, :color, keyword_init: true)
      Bar = Struct.new(:label, :segments, keyword_init: true) do
        def total
          segments.sum(&:value)
        end
      end

      WIDTH = 720
      BAR = 22
      GAP = 10
      CHAR = 7.2 # px per character of a label at the chart's font size (an estimate)
      MAX_LABEL = 48 # characters shown; the whole label is in the bar's <title>

      # @param id [String] unique in the page (the <title> and <desc> ids)
      # @param title [String] the chart's accessible name
      # @param description [String] what it shows, in a sentence
      # @param bars [Array<Bar>]
      # @param shown [#call] a value as its text (default: #to_s); money as "$0.0042"
      def initialize(id:, title:, description:, bars:, shown: :to_s.to_proc)
        @id = id
        @title = title
        @description = description
        @bars = bars
        @shown = shown
        @label_width = ((bars.map { |b| shown(b.label).length }.max || 0) * CHAR).clamp(60, MAX_LABEL * CHAR).round + 12
        @max = bars.map(&:total).max.to_f
        # Room right of the longest bar for its number.
        @room = [((bars.map { |b| @shown.call(b.total).to_s.length }.max || 0) * CHAR).round + 12, 70].max
      end

      # @param m [Markup]
      def render(m)
        height = (@bars.size * (BAR + GAP)) + GAP
        m.tag(:svg, class: "chart bars", viewBox: "0 0 #{WIDTH} #{height}", width: WIDTH, height: height,
                    role: "img", aria_labelledby: "#{@id}-title #{@id}-desc") do
          m.tag(:title, @title, id: "#{@id}-title")
          m.tag(:desc, @description, id: "#{@id}-desc")
          @bars.each_with_index { |bar, i| draw(m, bar, GAP + (i * (BAR + GAP))) }
        end
      end

      private

      def draw(m, bar, y)
        middle = y + (BAR / 2.0)
        m.tag(:g, class: "bar", data_label: bar.label, data_value: @shown.call(bar.total)) do
          m.tag(:title, "#{bar.label}: #{breakdown(bar)}")
          m.tag(:text, shown(bar.label), x: @label_width - 8, y: middle, class: "label")
          x = @label_width.to_f
          bar.segments.each do |segment|
            width = length(segment.value)
            m.tag(:rect, x: x.round(1), y: y, width: width.round(1), height: BAR, class: segment.color,
                         data_series: segment.name, data_value: @shown.call(segment.value))
            x += width
          end
          m.tag(:text, @shown.call(bar.total), x: (x + 6).round(1), y: middle, class: "value")
        end
      end

      # Bars share one scale; the longest leaves room for its number.
      def length(value)
        return 0.0 if @max.zero?

        value.to_f / @max * (WIDTH - @label_width - @room)
      end

      def breakdown(bar)
        return @shown.call(bar.total) if bar.segments.size == 1

        "#{bar.segments.map { |s| "#{s.name} #{@shown.call(s.value)}" }.join(', ')} (#{@shown.call(bar.total)})"
      end

      def shown(label)
        label = label.to_s
        label.length > MAX_LABEL ? "#{label[0, MAX_LABEL - 1]}…" : label
      end
    end
  end
end
