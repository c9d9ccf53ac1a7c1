# frozen_string_literal: true

module LlmFailover
  module Generators
    # What makes the generators safe to run again: a file that exists is left as the
    # app has it (the developer may have changed it), never overwritten nor asked about.
    module CreateOnce
      private

      def create_once(source, path)
        if File.exist?(File.join(destination_root, path))
          say_status :skip, "#{path} (exists; see the README for what it needs)", :yellow
        else
          template "#{source}.tt", path
        end
      end
    end
  end
end
