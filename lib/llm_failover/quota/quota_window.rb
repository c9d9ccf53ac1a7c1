# frozen_string_literal: true

require_relative "../errors"

module LlmFailover
  # The period a shared quota counts over: :hour, :day or :month (UTC calendar
  # periods), or a number of seconds (periods aligned on the Unix epoch). Each period
  # has its own counter in the state store, which expires when the period ends.
  class QuotaWindow
    NAMED = %i[hour day month].freeze

    # @return [Symbol, Integer]
    attr_reader :period

    # @return [QuotaWindow] frozen; one shared instance per named period (every chat
    #   has a window, used or not)
    # @raise [ConfigurationError]
    def self.for(period)
      NAMED_WINDOWS[period] || new(period)
    end

    # @raise [ConfigurationError]
    def initialize(period)
      unless NAMED.include?(period) || (period.is_a?(Integer) && period.positive?)
        raise ConfigurationError, "quota_window must be :hour, :day, :month or a positive Integer of seconds, " \
                                  "got #{period.inspect}"
      end

      @period = period
      freeze
    end

    # @return [Array(String, Float)] the id of the period +now+ falls in, and the
    #   seconds until it ends
    def at(now = Time.now)
      now = now.utc
      case @period
      when :hour then [now.strftime("%Y-%m-%dT%H"), 3600 - (now.min * 60) - now.sec - now.subsec.to_f]
      when :day then [now.strftime("%Y-%m-%d"), Time.utc(now.year, now.month, now.day) + 86_400 - now]
      when :month then [now.strftime("%Y-%m"), next_month(now) - now]
      else
        index, into = now.to_r.divmod(@period)
        ["#{@period}s:#{index}", (@period - into).to_f]
      end
    end

    def inspect
      "#<#{self.class.name} #{@period.inspect}>"
    end

    private

    def next_month(now)
      now.month == 12 ? Time.utc(now.year + 1, 1, 1) : Time.utc(now.year, now.month + 1, 1)
    end

    NAMED_WINDOWS = NAMED.to_h { |period| [period, new(period)] }.freeze
    private_constant :NAMED_WINDOWS
  end
end
