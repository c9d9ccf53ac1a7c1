# frozen_string_literal: true

require_relative "../timeline_chart"
require_relative "../../chat/target"

module LlmFailover
  class Report
    class Html
      # The page's timeline section (included in Html): the failure rate over time
      # per target, shaded with the incident windows and the circuits' open spans,
      # and its tables. Uses the page's section, legend, table, duration, @report and
      # @tables.
      module TimelineSection
        private

        def timeline(m)
          timeline = @report.timeline
          if timeline&.points&.any?
            chart = TimelineChart.new(id: "timeline", title: "Failure rate over time per provider and model",
                                      description: timeline_description(timeline), timeline: timeline, bands: bands)
          end
          section(m, "timeline", "Failure rate over time",
                  "Failed attempts out of the attempts that sent a request, per provider and model and per " \
                  "#{duration(timeline&.step)}. Shaded: incident windows (5-minute buckets with failures) and " \
                  "circuit openings.") do
            m.tag(:figure, class: "wide") do
              if chart
                chart.render(m)
                legend(m, chart.targets.map { |t| [t, chart.color(t)] } +
                          [["incident window", "incident"], ["circuit open", "circuit"]])
              else
                m.tag(:p, "No attempt sent a request in this period.", class: "note")
              end
            end
            m.tag(:div, class: "tables") do
              %i[failure_rates incident_windows circuit_windows open_circuits].each { |name| table(m, name) }
            end
            m.tag(:details) do
              m.tag(:summary, "Numbers per time bucket")
              table(m, :timeline)
            end
          end
        end

        def timeline_description(timeline)
          "Failure rate from #{timeline.starts_at.utc.strftime('%Y-%m-%d %H:%M')} to " \
            "#{timeline.ends_at.utc.strftime('%Y-%m-%d %H:%M')} UTC for #{timeline.targets.join(', ')}, " \
            "per #{duration(timeline.step)}; #{@report.incident_windows.size} incident windows and " \
            "#{circuit_bands.size} circuit openings shaded."
        end

        def bands
          incidents = @report.incident_windows.map do |w|
            TimelineChart::Band.new(kind: "incident", starts_at: w.starts_at, ends_at: w.ends_at,
                                    label: "Incident window #{@tables.window(w.starts_at, w.ends_at)}: " \
                                           "#{w.failures} of #{w.attempts} attempts failed (#{w.errors})")
          end
          incidents + circuit_bands
        end

        # The circuit log's open -> closed windows; without any (no log configured, or an
        # app that migrated before its table), the span from the first to the last call
        # routed around each open circuit: it was open at least that long.
        def circuit_bands
          @circuit_bands ||= if @report.circuit_windows.any?
                               @report.circuit_windows.map { |w| circuit_window_band(w) }
                             else
                               @report.open_circuits.map { |c| skipped_calls_band(c) }
                             end
        end

        def circuit_window_band(window)
          opened = @tables.clock(window.opened_at)
          state = window.closed_at ? "closed #{@tables.clock(window.closed_at)}" : "still open"
          TimelineChart::Band.new(kind: "circuit", starts_at: window.opened_at,
                                  ends_at: window.closed_at || @report.timeline.ends_at,
                                  label: "Circuit of #{Target.label(window.provider, window.model)} open #{opened}, #{state} " \
                                         "(#{window.reason}; #{window.reopens} failed probes, " \
                                         "#{window.routed_around} calls routed around)")
        end

        def skipped_calls_band(circuit)
          first = @tables.clock(circuit.first_skip)
          last = @tables.clock(circuit.last_skip)
          TimelineChart::Band.new(kind: "circuit", starts_at: circuit.first_skip, ends_at: circuit.last_skip,
                                  label: "Circuit of #{Target.label(circuit.provider, circuit.model)} open: #{circuit.calls} " \
                                         "calls routed around it, #{first} to #{last}")
        end
      end
    end
  end
end
